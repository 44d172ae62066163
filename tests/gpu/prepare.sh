#!/usr/bin/env bash
# On the development machine (the full build: tcc with the CUDA backend):
# makes the ARTIFACT_DIR that tests/gpu/run.sh trains on a GPU machine.
#
#   tests/gpu/prepare.sh [--deps] [--prebuilt BUILD_DIR]
#                        [--variant NAME VAR=VALUE]... [--ncu KERNEL]...
#                        [--pack FILE] TCC ARTIFACT_DIR
#
# TCC is the tcc binary (e.g. build/tools/tcc/tcc). ARTIFACT_DIR receives
#   mlp.tcc         examples/mlp.onnx, batch 32, SGD, fp32
#   mlp_accum.tcc   the same, batch 16 x 2 micro-batches (--grad-accum 2)
#   mlp_bf16.tcc    the same, batch 32, --precision bf16
#   gpt.tcc         examples/make_gpt.py's character GPT (T 64), batch 16, AdamW
#   gpt_bf16.tcc    the same in bf16 (AdamW writes the bf16 weight copies)
#   cnn.tcc         examples/make_cnn.py's ResNet-style CNN on the digits,
#                   batch 32, AdamW (convolutions, pooling, batch norm)
#   train_x.npy train_y.npy   the digits (examples/digits) for the MLPs
#   corpus.txt      examples/text/licenses.txt, byte tokens for the GPT
#   runs.txt        one line per artifact: NAME STEPS TOLERANCE ARGS...
#   nccl/           tests/gpu/nccl.sh's data-parallel artifacts and data
#   models/         benchmarks/gpu_models.py's MLP and GPT-style model at
#                   their benchmark batches (AdamW), and its config.json
# all compiled with --target cuda (sm_90a: H100/H200), and with --deps
#   deps.tar.gz     OpenBLAS, oneDNN, zlib, nlohmann-json, GoogleTest and
#                   OpenBLAS's Fortran runtime as installed here (Debian),
#                   for a GPU machine that lacks them
# and with --prebuilt BUILD_DIR (a runtime-only CUDA build made here:
# -DTCC_RUNTIME_ONLY=ON -DTCC_ENABLE_CUDA=ON, targets tcc-run tcc_unit_tests)
#   bin/            its tcc-run and tcc_unit_tests with the runtime library
#                   and the CUDA backend's module, stripped (~15 MB), which
#                   run.sh --prebuilt uses instead of building there
# and with --variant NAME VAR=VALUE (with --prebuilt; repeatable)
#   bin/tcc-run-NAME   bin/tcc-run with that environment variable set (e.g.
#                   attn32 TCC_CUDA_ATTENTION_WARP_ROWS=32), which
#                   device-call.sh times against bin/tcc-run
# and with --ncu KERNEL (repeatable; a kernel symbol such as tcc_fused_27 or
# attentionTiledQGradKernel, see `tcc compile --emit cuda` for the fused
# ones' numbers)
#   ncu.txt         one symbol a line: device-call.sh profiles its first
#                   launch in the largest GPT-2 artifact with Nsight Compute
# and with --pack FILE the whole ARTIFACT_DIR as one .tar.gz (about 30 MB
# with --deps and --prebuilt, half the unpacked size), which
# tests/gpu/device-call.sh takes.
set -euo pipefail

DEPS=0
PREBUILT=""
PACK=""
VARIANTS=()
NCU=()
usage() {
  echo "usage: tests/gpu/prepare.sh [--deps] [--prebuilt BUILD_DIR] [--variant NAME VAR=VALUE]... [--ncu KERNEL]... [--pack FILE] TCC ARTIFACT_DIR" >&2
  exit 64
}
bad() {
  echo "tests/gpu/prepare.sh: $*" >&2
  exit 64
}
while [ $# -gt 0 ]; do
  case "$1" in
    --deps) DEPS=1; shift ;;
    --prebuilt) [ $# -ge 2 ] || usage; PREBUILT="$2"; shift 2 ;;
    --pack) [ $# -ge 2 ] || usage; PACK="$2"; shift 2 ;;
    --variant)
      [ $# -ge 3 ] || usage
      [[ "$2" =~ ^[A-Za-z0-9_-]+$ ]] || bad "--variant name '$2' is not letters, digits, _ or -"
      [[ "$3" =~ ^[A-Z_][A-Z0-9_]*=[A-Za-z0-9_.,-]*$ ]] || bad "--variant $2: '$3' is not VAR=VALUE (VAR in capitals)"
      VARIANTS+=("$2" "$3"); shift 3 ;;
    --ncu)
      [ $# -ge 2 ] || usage
      [[ "$2" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || bad "--ncu '$2' is not a kernel symbol"
      NCU+=("$2"); shift 2 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || usage
[ ${#VARIANTS[@]} -eq 0 ] || [ -n "$PREBUILT" ] || bad "--variant needs --prebuilt (it wraps bin/tcc-run)"
if [ -n "$PACK" ]; then
  case "$PACK" in
    "$2"/* | "$2") echo "tests/gpu/prepare.sh: --pack $PACK is inside ARTIFACT_DIR $2" >&2; exit 64 ;;
  esac
fi
if [ -n "$PREBUILT" ]; then
  for b in tools/tcc-run/tcc-run tests/unit/tcc_unit_tests \
    runtime/libtcc_runtime.so runtime/libtcc_backend_cuda.so \
    runtime/libtcc_cpu_onednn.so; do
    [ -f "$PREBUILT/$b" ] || {
      echo "tests/gpu/prepare.sh: --prebuilt: no $PREBUILT/$b (build it: ninja -C $PREBUILT tcc-run tcc_unit_tests)" >&2
      exit 1
    }
  done
fi
TCC="$1"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$2"
OUT="$(cd "$2" && pwd)"
PY=/usr/bin/python3
ARCH="${TCC_GPU_ARCH:-sm_90a}"

compile() { # ONNX OUTPUT FLAGS...
  local onnx="$1" art="$2"
  shift 2
  echo "tcc compile $(basename "$onnx") $* -> $art"
  "$TCC" compile "$onnx" --target cuda --gpu-arch "$ARCH" -o "$OUT/$art" "$@"
}

compile "$ROOT/examples/mlp.onnx" mlp.tcc --batch 32
compile "$ROOT/examples/mlp.onnx" mlp_accum.tcc --batch 16 --grad-accum 2
compile "$ROOT/examples/mlp.onnx" mlp_bf16.tcc --batch 32 --precision bf16
"$PY" "$ROOT/examples/make_gpt.py" -o "$OUT/gpt.onnx"
compile "$OUT/gpt.onnx" gpt.tcc --batch 16 --freeze mask --optimizer adamw
compile "$OUT/gpt.onnx" gpt_bf16.tcc --batch 16 --freeze mask --optimizer adamw \
  --precision bf16
# A head of 4099 classes: the loss region's rows are too wide for a warp,
# so its kernel takes a block per row with the logits staged in shared
# memory ("block_rows"), and the padded vocabulary leaves a partial
# 16-byte tail. Seeded weights keep the artifact small. For sm_90 the
# kernel strides over the rows with 8 blocks a multiprocessor, copying each
# block's next row while it computes one: at batch 32 (2048 rows) an H100's
# 1056 blocks take one or two rows each, so the copies of next rows run.
"$PY" "$ROOT/examples/make_gpt.py" -o "$OUT/gpt_vocab.onnx" --vocab 4099
compile "$OUT/gpt_vocab.onnx" gpt_vocab_bf16.tcc --batch 32 --freeze mask \
  --optimizer adamw --precision bf16 --weights seeded
# A ResNet-style CNN on the digits (examples/make_cnn.py): the convolutions
# (cuDNN), pooling and batch norm on the GPU against the CPU's.
"$PY" "$ROOT/examples/make_cnn.py" -o "$OUT/cnn.onnx"
compile "$OUT/cnn.onnx" cnn.tcc --batch 32 --optimizer adamw
rm -f "$OUT/gpt.onnx" "$OUT/gpt_vocab.onnx" "$OUT/cnn.onnx"
# The other issues' models at benchmark batches, for run.sh's models part
# (benchmarks/gpu_models.py: tcc against PyTorch eager and torch.compile).
"$PY" "$ROOT/benchmarks/gpu_models.py" prepare --out "$OUT/models" --tcc "$TCC" \
  --gpu-arch "$ARCH"
cp "$ROOT/examples/digits/train_x.npy" "$ROOT/examples/digits/train_y.npy" "$OUT/"
cp "$ROOT/examples/text/licenses.txt" "$OUT/corpus.txt"
# The data-parallel artifacts (run.sh's nccl part).
"$ROOT/tests/gpu/nccl.sh" prepare "$TCC" "$OUT/nccl"

# Steps and the tolerance of the cuda-vs-cpu loss-curve comparison
# (tests/gpu/gpu_report.py compare): fp32 artifacts agree to ~1e-4 on the
# first steps and drift slowly; bf16 rounds its GEMM inputs and sums in
# another order on each side.
cat > "$OUT/runs.txt" <<'EOF'
# artifact      steps tolerance arguments (paths relative to this directory)
mlp.tcc         200   0.02      --data x=train_x.npy --data labels=train_y.npy
mlp_accum.tcc   100   0.02      --data x=train_x.npy --data labels=train_y.npy
mlp_bf16.tcc    100   0.05      --data x=train_x.npy --data labels=train_y.npy
gpt.tcc         40    0.02      --tokens corpus.txt
gpt_bf16.tcc    40    0.05      --tokens corpus.txt
gpt_vocab_bf16.tcc 40 0.05      --tokens corpus.txt
cnn.tcc         100   0.02      --data x=train_x.npy --data labels=train_y.npy
EOF

if [ "$DEPS" -eq 1 ]; then
  # The installed files of the packages the runtime build needs (no
  # download): headers, shared and static libraries, CMake configs.
  pkgs="libopenblas0-pthread libopenblas-pthread-dev zlib1g zlib1g-dev
        nlohmann-json3-dev libgtest-dev libgfortran5 libquadmath0
        libdnnl2 libdnnl-dev libgomp1 ocl-icd-libopencl1 ocl-icd-opencl-dev
        opencl-c-headers"
  list="$(mktemp)"
  for p in $pkgs; do
    dpkg -L "$p" 2>/dev/null || dpkg -L "$p:amd64"
  done | sort -u | while read -r f; do
    case "$f" in
      /usr/share/doc/* | /usr/share/man/* | *openblas*.a | */libblas.a | */liblapack.a) ;;
      # Files and links to files (not /lib itself, a link on merged-/usr
      # systems).
      *) if [ -f "$f" ] && { [ ! -L "$f" ] || [ ! -d "$f" ]; }; then echo "$f"; fi ;;
    esac
  done > "$list"
  tar -czf "$OUT/deps.tar.gz" -T "$list" 2> >(grep -v 'Removing leading' >&2)
  rm -f "$list"
  echo "deps.tar.gz: $(du -h "$OUT/deps.tar.gz" | cut -f1)"
fi
if [ -n "$PREBUILT" ]; then
  mkdir -p "$OUT/bin"
  # The runners, the runtime library they link and the CUDA backend's and
  # the CPU's oneDNN modules, which the runtime loads from beside itself: in
  # one folder, the runners find the library there ($ORIGIN in their run
  # path).
  for b in tools/tcc-run/tcc-run tests/unit/tcc_unit_tests \
    runtime/libtcc_runtime.so runtime/libtcc_backend_cuda.so \
    runtime/libtcc_cpu_onednn.so; do
    strip -o "$OUT/bin/$(basename "$b")" "$PREBUILT/$b"
  done
  for ((i = 0; i < ${#VARIANTS[@]}; i += 2)); do
    w="$OUT/bin/tcc-run-${VARIANTS[i]}"
    printf '#!/bin/sh\n# bin/tcc-run with %s (tests/gpu/prepare.sh --variant)\n%s exec "$(dirname "$0")/tcc-run" "$@"\n' \
      "${VARIANTS[i + 1]}" "${VARIANTS[i + 1]}" > "$w"
    chmod +x "$w"
    echo "bin/tcc-run-${VARIANTS[i]}: ${VARIANTS[i + 1]}"
  done
  echo "bin/: $(du -sh "$OUT/bin" | cut -f1)"
fi
rm -f "$OUT/ncu.txt"
[ ${#NCU[@]} -eq 0 ] || printf '%s\n' "${NCU[@]}" > "$OUT/ncu.txt"
echo "prepared $OUT: $(ls "$OUT" | tr '\n' ' ')"
if [ -n "$PACK" ]; then
  mkdir -p "$(dirname "$PACK")"
  tar -czf "$PACK.tmp" -C "$OUT" . && mv "$PACK.tmp" "$PACK"
  echo "packed $PACK: $(du -h "$PACK" | cut -f1)"
fi
