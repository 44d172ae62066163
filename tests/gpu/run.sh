#!/usr/bin/env bash
# tcc's GPU checks, for a machine with an NVIDIA GPU, CMake, a C++ compiler,
# the CUDA toolkit and Python (no MLIR, LLVM or ONNX: artifacts are compiled
# elsewhere, see tests/gpu/README.md).
#
#   tests/gpu/run.sh OUTDIR [ARTIFACT_DIR] [--build-dir DIR] [--parts LIST]
#                    [--prebuilt DIR]
#
# --build-dir DIR: build there instead of OUTDIR/build (keep the build out of
#   a results folder that is copied back, and reuse it in a later call).
# --parts LIST: the steps after the build, comma-separated, any of unit,
#   unit-cuda (step 2's CUDA tests alone), train (step 3), nccl (step 3b),
#   gpt2 (step 4) and models (step 5); default unit,train,nccl,gpt2,models. A machine that
#   allows a few minutes per command can run them in separate calls over
#   one --build-dir.
# --prebuilt DIR: DIR holds tcc-run and tcc_unit_tests built on another x86-64
#   machine (tests/gpu/prepare.sh --prebuilt puts them in ARTIFACT_DIR/bin);
#   they are used when they start and see the GPU, and the build is skipped
#   (minutes of a lent machine). Otherwise the script builds as usual.
#
# 1. builds the runtime-only runner (tcc-run) and the unit tests with the
#    CUDA backend into OUTDIR/build (dependencies missing on the machine come
#    from ARTIFACT_DIR/deps.tar.gz when it is there);
# 2. runs the unit tests: all of them, and the CUDA ones (GPU vs CPU
#    numerics, the GPU training loop) none of which may be skipped;
# 3. for each artifact ARTIFACT_DIR/runs.txt lists: trains it on cuda and on
#    cpu and compares the loss curves, then `tcc-run bench --device cuda`;
# 3b. the data-parallel path on NCCL (tests/gpu/nccl.sh run, artifacts in
#    ARTIFACT_DIR/nccl): one rank forced through NCCL equals a plain run,
#    and two ranks on two GPUs (when there are) one process;
# 4. runs benchmarks/gpt2_small.py when it exists (its artifacts in
#    ARTIFACT_DIR/gpt2_small, from its `prepare` step), with a row for each
#    runner variant beside the prebuilt tcc-run (tcc-run-NAME, from
#    prepare.sh --variant) when the prebuilt binaries run;
# 5. runs benchmarks/gpu_models.py on ARTIFACT_DIR/models (the MLP and the
#    GPT-style model against PyTorch eager and torch.compile);
# 6. writes OUTDIR/results.md (tables) and a log per step in OUTDIR.
# Exit status: 0 when every step passed, 1 when one failed (named on
# stderr and in results.md), 2 without a GPU, 64 for wrong arguments.
set -uo pipefail

usage() {
  echo "usage: tests/gpu/run.sh OUTDIR [ARTIFACT_DIR] [--build-dir DIR] [--parts unit,train,gpt2,models] [--prebuilt DIR]  (see tests/gpu/README.md)" >&2
  exit 64
}
POS=()
BUILD_ARG=""
PREBUILT=""
PARTS="unit,train,nccl,gpt2,models"
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage ;;
    --build-dir) [ $# -ge 2 ] || usage; BUILD_ARG="$2"; shift 2 ;;
    --build-dir=*) BUILD_ARG="${1#*=}"; shift ;;
    --parts) [ $# -ge 2 ] || usage; PARTS="$2"; shift 2 ;;
    --prebuilt) [ $# -ge 2 ] || usage; PREBUILT="$2"; shift 2 ;;
    --prebuilt=*) PREBUILT="${1#*=}"; shift ;;
    --parts=*) PARTS="${1#*=}"; shift ;;
    -*) echo "tests/gpu/run.sh: unknown option $1" >&2; usage ;;
    *) POS+=("$1"); shift ;;
  esac
done
[ ${#POS[@]} -ge 1 ] && [ ${#POS[@]} -le 2 ] || usage
for p in ${PARTS//,/ }; do
  case "$p" in
    unit | unit-cuda | train | nccl | gpt2 | models) ;;
    *) echo "tests/gpu/run.sh: --parts: unknown part '$p' (unit, unit-cuda, train, nccl, gpt2, models)" >&2; exit 64 ;;
  esac
done
want() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
set -- "${POS[@]}"

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$1" || exit 1
OUT="$(cd "$1" && pwd)"
ART=""
if [ $# -eq 2 ]; then
  [ -d "$2" ] || { echo "tests/gpu/run.sh: ARTIFACT_DIR $2 is not a directory" >&2; exit 64; }
  ART="$(cd "$2" && pwd)"
fi
mkdir -p "${BUILD_ARG:-$OUT/build}" || exit 1
BUILD="$(cd "${BUILD_ARG:-$OUT/build}" && pwd)"
PY="${PYTHON:-python3}"
REPORT="$ROOT/tests/gpu/gpu_report.py"
JOBS="$(nproc 2>/dev/null || echo 4)"
rm -rf "$OUT/rows" "$OUT/status.txt" "$OUT/results.md"
mkdir -p "$OUT/rows" "$OUT/logs"
exec > >(tee "$OUT/run.log") 2>&1

FAILED=0
write_results() { "$PY" "$REPORT" results "$OUT" || echo "tests/gpu/run.sh: could not write results.md" >&2; }
finish() {
  if [ "$FAILED" -ne 0 ]; then
    echo "FAILED ($FAILED step(s); see run.log)" > "$OUT/status.txt"
  else
    echo "all steps passed" > "$OUT/status.txt"
  fi
  write_results
  echo "== results: $OUT/results.md"
  [ "$FAILED" -eq 0 ] || { echo "tests/gpu/run.sh: FAILED: $FAILED step(s)" >&2; exit 1; }
  exit 0
}
# A step that must pass for anything after it to make sense.
fatal() {
  echo "tests/gpu/run.sh: FAILED: $*" >&2
  echo "FAILED: $*" > "$OUT/status.txt"
  write_results
  exit 1
}
# A step whose failure is recorded; the script goes on and exits 1 at the end.
failed() {
  echo "tests/gpu/run.sh: FAILED: $*" >&2
  FAILED=$((FAILED + 1))
}
no_gpu() {
  echo "tests/gpu/run.sh: no GPU: $*" >&2
  echo "tests/gpu/run.sh needs a machine with an NVIDIA GPU (see tests/gpu/README.md)" >&2
  echo "no GPU: $*" > "$OUT/status.txt"
  exit 2
}

echo "== tcc GPU checks: $ROOT -> $OUT${ART:+ (artifacts: $ART)}"
# 0. A GPU, before spending minutes on the build (tcc-run info decides for
#    certain after it).
if command -v nvidia-smi >/dev/null 2>&1; then
  if ! nvidia-smi -L > "$OUT/logs/nvidia-smi.txt" 2>&1 ||
    ! grep -q '^GPU ' "$OUT/logs/nvidia-smi.txt"; then
    no_gpu "nvidia-smi -L lists none: $(head -c 300 "$OUT/logs/nvidia-smi.txt")"
  fi
  cat "$OUT/logs/nvidia-smi.txt"
fi
command -v cmake >/dev/null 2>&1 || fatal "cmake is not installed"
NVCC="$(command -v nvcc || true)"
[ -n "$NVCC" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || NVCC=/usr/local/cuda/bin/nvcc
[ -n "$NVCC" ] || fatal "no nvcc (the CUDA toolkit) on PATH or in /usr/local/cuda/bin"

# 1. Dependencies and the build.
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DTCC_RUNTIME_ONLY=ON -DTCC_ENABLE_CUDA=ON
  "-DCMAKE_CUDA_COMPILER=$NVCC")
command -v ninja >/dev/null 2>&1 && CMAKE_ARGS+=(-G Ninja)
if [ -n "$ART" ] && [ -f "$ART/deps.tar.gz" ]; then
  # OpenBLAS, zlib, nlohmann-json, GoogleTest (and OpenBLAS's gfortran
  # runtime) as installed on the development machine, in a prefix of their
  # own: searched before the system's.
  DEPS="$BUILD/deps"
  rm -rf "$DEPS" && mkdir -p "$DEPS" &&
    tar -xzf "$ART/deps.tar.gz" -C "$DEPS" || fatal "cannot unpack $ART/deps.tar.gz"
  # Absolute links (libz.so -> /lib/...) point into the prefix instead.
  find "$DEPS" -type l | while read -r l; do
    t="$(readlink "$l")"
    case "$t" in /*) [ -e "$DEPS$t" ] && ln -sfn "$DEPS$t" "$l" ;; esac
  done
  LIBDIR="$DEPS/usr/lib/x86_64-linux-gnu"
  CMAKE_ARGS+=("-DCMAKE_PREFIX_PATH=$DEPS/usr"
    "-DCMAKE_INCLUDE_PATH=$DEPS/usr/include/x86_64-linux-gnu/openblas-pthread;$DEPS/usr/include"
    "-DCMAKE_LIBRARY_PATH=$LIBDIR/openblas-pthread;$LIBDIR;$DEPS/lib/x86_64-linux-gnu")
  export LD_LIBRARY_PATH="$LIBDIR/openblas-pthread:$LIBDIR:$DEPS/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== dependencies from $ART/deps.tar.gz (in $DEPS)"
fi
# Prebuilt binaries link the toolkit's cuBLASLt and cuDNN dynamically: its library
# folder goes on the search path.
CUDA_HOME_GUESS="$(cd "$(dirname "$NVCC")/.." && pwd)"
for d in "$CUDA_HOME_GUESS/lib" "$CUDA_HOME_GUESS/lib64" "$CUDA_HOME_GUESS/targets/x86_64-linux/lib"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
RUN="$BUILD/tools/tcc-run/tcc-run"
UNIT="$BUILD/tests/unit/tcc_unit_tests"
if [ -n "$PREBUILT" ] && [ -x "$PREBUILT/tcc-run" ] && [ -x "$PREBUILT/tcc_unit_tests" ] &&
  "$PREBUILT/tcc-run" info > "$OUT/logs/prebuilt-info.txt" 2>&1 &&
  ! grep -q '^GPU: none' "$OUT/logs/prebuilt-info.txt"; then
  RUN="$(cd "$PREBUILT" && pwd)/tcc-run"
  UNIT="$(cd "$PREBUILT" && pwd)/tcc_unit_tests"
  echo "== prebuilt binaries from $PREBUILT (no build)"
else
  if [ -n "$PREBUILT" ]; then
    echo "== $PREBUILT/tcc-run does not run or sees no GPU here; building instead:"
    head -n 5 "$OUT/logs/prebuilt-info.txt" 2>/dev/null
  fi
  echo "== configure ($OUT/logs/configure.log)"
  cmake -S "$ROOT" -B "$BUILD" "${CMAKE_ARGS[@]}" > "$OUT/logs/configure.log" 2>&1 || {
    tail -n 30 "$OUT/logs/configure.log"
    fatal "configure failed (logs/configure.log); a missing package (OpenBLAS, oneDNN, zlib, nlohmann-json, GoogleTest) comes from ARTIFACT_DIR/deps.tar.gz: tests/gpu/prepare.sh --deps"
  }
  grep -q "tcc: CUDA backend ON" "$OUT/logs/configure.log" || fatal "the CUDA backend is not in the build (logs/configure.log)"
  echo "== build ($OUT/logs/build.log)"
  cmake --build "$BUILD" -j "$JOBS" --target tcc-run tcc_unit_tests > "$OUT/logs/build.log" 2>&1 || {
    grep -E "error|Error" "$OUT/logs/build.log" | head -n 30
    fatal "build failed (logs/build.log)"
  }
fi
"$RUN" info > "$OUT/info.txt" 2>&1 || fatal "tcc-run info failed: $(cat "$OUT/info.txt")"
cat "$OUT/info.txt"
if grep -q '^GPU: none' "$OUT/info.txt"; then
  no_gpu "$(grep '^GPU: none' "$OUT/info.txt")"
fi

# 2. Unit tests.
if want unit || want unit-cuda; then
  echo "== unit tests, CUDA ones ($OUT/logs/unit-cuda.log)"
  # The conformance cases on the cuda backend (ConformanceTest.cpp; the
  # cpu backend's run in every CI build) besides the CUDA tests.
  TCC_GPU_TEST_DIR="$ART" "$UNIT" --gtest_filter='Cuda*:Conformance/*cuda_*:DeviceSelect*' > "$OUT/logs/unit-cuda.log" 2>&1
  rc=$?
  # The counts, and the names of failed and skipped tests.
  grep -E '^\[==========\] [0-9]+ tests? from .* ran|^\[  (PASSED|FAILED|SKIPPED) +\] ' "$OUT/logs/unit-cuda.log" |
    grep -vE '^\[  (FAILED|SKIPPED) +\] [A-Za-z0-9_/.]+ \(' > "$OUT/unit-summary.txt"
  cat "$OUT/unit-summary.txt"
  [ $rc -eq 0 ] || failed "CUDA unit tests (logs/unit-cuda.log): $(grep '^\[  FAILED  \]' "$OUT/logs/unit-cuda.log" | head -n 10 | tr '\n' ' ')"
  # On a GPU machine no CUDA test may skip: a skip there hides a failure.
  # A conformance case skips on cuda only for a kernel CUDA lacks, once its
  # session has refused the case ("has no kernel for"); any other skip of
  # one fails too.
  SKIPS="$( (grep '^\[  SKIPPED \] Cuda.* (' "$OUT/logs/unit-cuda.log";
    awk '/^\[ RUN/ { lacks = 0 } /has no kernel for/ { lacks = 1 }
      /^\[  SKIPPED \] Conformance.* \(/ && !lacks' "$OUT/logs/unit-cuda.log") | sort -u || true)"
  if [ -n "$SKIPS" ]; then
    grep -B2 '^\[  SKIPPED \] \(Cuda\|Conformance\)' "$OUT/logs/unit-cuda.log" | grep -v '^\[\|^--\|^$' | sort -u | sed 's/^/  reason: /'
    failed "CUDA unit tests skipped on a GPU machine: $(echo "$SKIPS" | sed 's/.*\] //; s/ (.*//' | tr '\n' ' ')"
  fi
fi
if want unit; then
  echo "== unit tests, all ($OUT/logs/unit-all.log)"
  TCC_GPU_TEST_DIR="$ART" "$UNIT" > "$OUT/logs/unit-all.log" 2>&1 ||
    failed "unit tests (logs/unit-all.log): $(grep '^\[  FAILED  \]' "$OUT/logs/unit-all.log" | head -n 10 | tr '\n' ' ')"
  tail -n 3 "$OUT/logs/unit-all.log"
fi

# 3. The artifacts: loss curves on cuda and cpu, then bench.
if [ -z "$ART" ] && { want train || want nccl || want gpt2 || want models; }; then
  failed "no ARTIFACT_DIR: no training was checked (tests/gpu/README.md says how to make one)"
  finish
fi
if want train; then
  [ -f "$ART/runs.txt" ] || fatal "$ART/runs.txt is missing (tests/gpu/prepare.sh writes it)"
  shopt -s nullglob
  ARTIFACTS=("$ART"/*.tcc)
  [ ${#ARTIFACTS[@]} -gt 0 ] || failed "no *.tcc in $ART"
  for art in "${ARTIFACTS[@]}"; do
    name="$(basename "$art" .tcc)"
    line="$(grep -E "^$(basename "$art")[[:space:]]" "$ART/runs.txt" | head -n 1)"
    if [ -z "$line" ]; then
      failed "$name: $(basename "$art") has no line in runs.txt"
      continue
    fi
    read -r _ steps tol rest <<< "$line"
    # Data paths are relative to ARTIFACT_DIR.
    args=()
    for a in $rest; do
      case "$a" in
        *=*) [ -e "$ART/${a#*=}" ] && a="${a%%=*}=$ART/${a#*=}" ;;
        *) [ -e "$ART/$a" ] && a="$ART/$a" ;;
      esac
      args+=("$a")
    done
    for dev in cuda cpu; do
      echo "== $name: train $steps steps on $dev ($OUT/logs/$name-train-$dev.log)"
      if ! "$RUN" train "$art" --device "$dev" --steps "$steps" --no-progress \
        --metrics "$OUT/logs/$name-$dev.jsonl" "${args[@]}" > "$OUT/logs/$name-train-$dev.log" 2>&1; then
        tail -n 5 "$OUT/logs/$name-train-$dev.log"
        failed "$name: training on $dev (logs/$name-train-$dev.log)"
        continue 2
      fi
      grep '^trained' "$OUT/logs/$name-train-$dev.log"
    done
    "$PY" "$REPORT" compare "$name" "$OUT/logs/$name-cuda.jsonl" "$OUT/logs/$name-cpu.jsonl" \
      "$tol" "$OUT/rows/1-$name.json" || failed "$name: the cuda and cpu loss curves differ"
    echo "== $name: bench on cuda ($OUT/logs/$name-bench.log)"
    if "$RUN" bench "$art" --device cuda --json > "$OUT/logs/$name-bench.log" 2>&1 &&
      "$RUN" bench "$art" --device cuda --json --only compiled --tf32 >> "$OUT/logs/$name-bench.log" 2>&1; then
      grep -v '^{' "$OUT/logs/$name-bench.log"
      "$PY" "$REPORT" bench "$name" "$OUT/logs/$name-bench.log" "$OUT/rows/2-$name.json" ||
        failed "$name: bench output (logs/$name-bench.log)"
    else
      tail -n 5 "$OUT/logs/$name-bench.log"
      failed "$name: tcc-run bench --device cuda (logs/$name-bench.log)"
    fi
  done
fi

# 3b. Data parallel on NCCL: its own script, its table in nccl/nccl.md.
if want nccl; then
  if [ ! -d "$ART/nccl" ]; then
    failed "nccl: no $ART/nccl (tests/gpu/prepare.sh makes it with tests/gpu/nccl.sh prepare)"
  else
    echo "== nccl: tests/gpu/nccl.sh ($OUT/nccl/nccl.log)"
    bash "$ROOT/tests/gpu/nccl.sh" run "$OUT/nccl" "$ART/nccl" "$RUN" > /dev/null 2>&1 ||
      failed "nccl: the data-parallel checks (nccl/nccl.md)"
    [ -f "$OUT/nccl/nccl.md" ] && cat "$OUT/nccl/nccl.md"
  fi
fi

# 4. The lead's GPT-2-small benchmark, when it is in the tree.
if want gpt2 && [ -f "$ROOT/benchmarks/gpt2_small.py" ]; then
  G="$ART/gpt2_small"
  if [ ! -f "$G/config.json" ]; then
    failed "benchmarks/gpt2_small.py: no $G/config.json (prepare it: benchmarks/gpt2_small.py prepare --out ARTIFACT_DIR/gpt2_small)"
  else
    # The prepared variants (wrappers of the prebuilt tcc-run under a
    # setting) get rows of their own, measured in the same run.
    VARIANT_ARGS=()
    for v in "$(dirname "$RUN")"/tcc-run-*; do
      [ -x "$v" ] && [ "$(dirname "$RUN")" != "$BUILD/tools/tcc-run" ] || continue
      VARIANT_ARGS+=(--tcc-variant "${v##*/tcc-run-}=$v")
    done
    echo "== benchmarks/gpt2_small.py ($OUT/logs/gpt2_small.out)"
    "$PY" "$ROOT/benchmarks/gpt2_small.py" run --artifacts "$G" --tcc-run "$RUN" \
      --out "$OUT" "${VARIANT_ARGS[@]}" > "$OUT/logs/gpt2_small.out" 2>&1 ||
      failed "benchmarks/gpt2_small.py (logs/gpt2_small.out, gpt2_small.log)"
    cat "$OUT/logs/gpt2_small.out"
  fi
fi

# 5. The other issues' models against PyTorch.
if want models && [ -f "$ROOT/benchmarks/gpu_models.py" ]; then
  M="$ART/models"
  if [ ! -f "$M/config.json" ]; then
    failed "benchmarks/gpu_models.py: no $M/config.json (tests/gpu/prepare.sh makes it)"
  else
    echo "== benchmarks/gpu_models.py ($OUT/logs/gpu_models.out)"
    "$PY" "$ROOT/benchmarks/gpu_models.py" run --artifacts "$M" --tcc-run "$RUN" \
      --out "$OUT" > "$OUT/logs/gpu_models.out" 2>&1 ||
      failed "benchmarks/gpu_models.py (logs/gpu_models.out, gpu_models.log)"
    cat "$OUT/logs/gpu_models.out"
  fi
fi
finish
