#!/usr/bin/env bash
# The CUDA backend's data-parallel path (NCCL) on a GPU machine.
#
#   tests/gpu/nccl.sh prepare TCC ARTIFACT_DIR     (development machine)
#   tests/gpu/nccl.sh run OUTDIR ARTIFACT_DIR TCC_RUN [--tol X]   (GPU machine)
#
# prepare compiles, with --data-parallel --target cuda (TCC_GPU_ARCH,
# default sm_90a) and small buckets so that each step has several:
#   mlp32.tcc mlp16.tcc   examples/mlp.onnx at batch 32 and 16 (SGD, fp32)
#   gpt16.tcc gpt8.tcc    examples/make_gpt.py's GPT at batch 16 and 8 (AdamW,
#                         seeded weights: small artifacts)
#   train_x.npy train_y.npy corpus.txt   their data
#
# run, on one GPU (no mpirun needed; with mpirun, under `mpirun -np 1`):
#   1. each 32/16 artifact trained plainly and with TCC_NCCL=force (the
#      NCCL path with one rank), compiled (CUDA graphs) and --eager: the
#      loss curves must be equal to the last bit (the mean over one rank is
#      the value itself) and NCCL must have started (NCCL_DEBUG=INFO);
#   2. TCC_NCCL_LIBRARY naming no file: a plain one-rank run still trains
#      (it never loads NCCL) and a forced one fails with "cannot load NCCL";
# and on a machine with two GPUs or more and mpirun:
#   3. `mpirun -np 2` of the 16/8 artifacts against one process of the
#      32/16 ones, --no-shuffle: each step's loss (the ranks' mean) within
#      --tol relative (default 1e-4: the batch's sums split differently).
# Logs and a summary (nccl.md) go to OUTDIR. Exit status 0 when every check
# ran passed, 1 when one failed, 2 without a GPU, 64 for wrong arguments.
set -uo pipefail

usage() {
  echo "usage: tests/gpu/nccl.sh prepare TCC ARTIFACT_DIR | run OUTDIR ARTIFACT_DIR TCC_RUN [--tol X]" >&2
  exit 64
}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${PYTHON:-python3}"
[ $# -ge 1 ] || usage
CMD="$1"
shift

if [ "$CMD" = prepare ]; then
  [ $# -eq 2 ] || usage
  set -e
  TCC="$1"
  mkdir -p "$2"
  A="$(cd "$2" && pwd)"
  ARCH="${TCC_GPU_ARCH:-sm_90a}"
  common=(--data-parallel --target cuda --gpu-arch "$ARCH")
  for b in 32 16; do
    "$TCC" compile "$ROOT/examples/mlp.onnx" --batch "$b" --bucket-mb 0.02 \
      "${common[@]}" -o "$A/mlp$b.tcc"
  done
  /usr/bin/python3 "$ROOT/examples/make_gpt.py" -o "$A/gpt.onnx"
  for b in 16 8; do
    "$TCC" compile "$A/gpt.onnx" --batch "$b" --freeze mask --optimizer adamw \
      --bucket-mb 0.25 --weights seeded "${common[@]}" -o "$A/gpt$b.tcc"
  done
  rm -f "$A/gpt.onnx"
  cp "$ROOT/examples/digits/train_x.npy" "$ROOT/examples/digits/train_y.npy" "$A/"
  cp "$ROOT/examples/text/licenses.txt" "$A/corpus.txt"
  echo "tests/gpu/nccl.sh: artifacts in $A"
  exit 0
fi

[ "$CMD" = run ] || usage
[ $# -ge 3 ] || usage
mkdir -p "$1" || exit 1
OUT="$(cd "$1" && pwd)"
[ -d "$2" ] || { echo "tests/gpu/nccl.sh: no ARTIFACT_DIR $2" >&2; exit 64; }
A="$(cd "$2" && pwd)"
RUN="$3"
shift 3
TOL=1e-4
while [ $# -gt 0 ]; do
  case "$1" in
    --tol) TOL="$2"; shift 2 ;;
    *) usage ;;
  esac
done
[ -x "$RUN" ] || { echo "tests/gpu/nccl.sh: TCC_RUN $RUN is not executable" >&2; exit 64; }
mkdir -p "$OUT/logs"
exec > >(tee "$OUT/nccl.log") 2>&1

GPUS="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
if [ "${GPUS:-0}" -lt 1 ]; then
  echo "tests/gpu/nccl.sh: no GPU (nvidia-smi -L)" >&2
  exit 2
fi
MPIRUN="$(command -v mpirun || true)"
# As root Open MPI asks for both; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
FAILED=0
SUMMARY=()
pass() { echo "PASS: $*"; SUMMARY+=("| pass | $* |"); }
fail() { echo "FAIL: $*" >&2; SUMMARY+=("| FAIL | $* |"); FAILED=$((FAILED + 1)); }
skip() { echo "SKIP: $*"; SUMMARY+=("| skip | $* |"); }

data_args() {
  case "$1" in
    mlp*) echo "--data x=$A/train_x.npy --data labels=$A/train_y.npy" ;;
    gpt*) echo "--tokens $A/corpus.txt" ;;
  esac
}
steps_of() { case "$1" in mlp*) echo 60 ;; gpt*) echo 30 ;; esac; }

# train NAME LOG METRICS [ENV=VALUE...] -- [extra args]: one run of one
# process (under `mpirun -np 1` when there is one).
train1() {
  local art="$1" log="$2" metrics="$3"
  shift 3
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  local name
  name="$(basename "$art" .tcc)"
  local launch=()
  [ -n "$MPIRUN" ] && launch=("$MPIRUN" -np 1)
  # shellcheck disable=SC2046
  env "${envs[@]}" "${launch[@]}" "$RUN" train "$art" --device cuda \
    --steps "$(steps_of "$name")" --no-shuffle --no-progress \
    --metrics "$metrics" $(data_args "$name") "$@" > "$log" 2>&1
}

losses() { "$PY" -c 'import json,sys; print(" ".join(repr(json.loads(l)["loss"]) for l in open(sys.argv[1]) if l.strip()))' "$1"; }

echo "== NCCL checks: $GPUS GPU(s), mpirun: ${MPIRUN:-none}, runner $RUN"
"$RUN" info > "$OUT/logs/info.txt" 2>&1 || true

# 1. One rank forced through NCCL = the plain run, bit for bit.
for name in mlp32 gpt16; do
  art="$A/$name.tcc"
  for mode in compiled eager; do
    extra=()
    [ "$mode" = eager ] && extra=(--eager)
    p="$OUT/logs/$name-$mode-plain"
    f="$OUT/logs/$name-$mode-nccl"
    if ! train1 "$art" "$p.log" "$p.jsonl" TCC_NCCL=auto -- "${extra[@]}"; then
      tail -n 5 "$p.log"; fail "$name $mode: plain run ($p.log)"; continue
    fi
    if ! train1 "$art" "$f.log" "$f.jsonl" TCC_NCCL=force NCCL_DEBUG=INFO -- "${extra[@]}"; then
      tail -n 5 "$f.log"; fail "$name $mode: TCC_NCCL=force run ($f.log)"; continue
    fi
    if ! grep -q "NCCL INFO" "$f.log"; then
      fail "$name $mode: TCC_NCCL=force ran without starting NCCL ($f.log)"
    elif [ "$(losses "$p.jsonl")" = "$(losses "$f.jsonl")" ] && [ -n "$(losses "$p.jsonl")" ]; then
      pass "$name $mode: one rank through NCCL, losses equal to the plain run's ($(grep -c . "$p.jsonl") steps)"
    else
      fail "$name $mode: losses differ between the plain and the NCCL run ($p.jsonl, $f.jsonl)"
    fi
  done
done

# 2. Without libnccl: one rank needs none; forced, a clear error.
m="$OUT/logs/missing"
if train1 "$A/mlp32.tcc" "$m-plain.log" "$m-plain.jsonl" TCC_NCCL_LIBRARY=/nonexistent/libnccl.so.2 --; then
  pass "one rank without NCCL present trains"
else
  tail -n 5 "$m-plain.log"; fail "one rank without NCCL present ($m-plain.log)"
fi
if train1 "$A/mlp32.tcc" "$m-force.log" "$m-force.jsonl" TCC_NCCL=force TCC_NCCL_LIBRARY=/nonexistent/libnccl.so.2 --; then
  fail "TCC_NCCL=force without NCCL trained ($m-force.log)"
elif grep -q "cannot load NCCL" "$m-force.log"; then
  pass "TCC_NCCL=force without NCCL: $(grep -o 'cannot load NCCL[^(]*' "$m-force.log" | head -n 1)"
else
  tail -n 5 "$m-force.log"; fail "TCC_NCCL=force without NCCL: no 'cannot load NCCL' ($m-force.log)"
fi

# 3. Two ranks on two GPUs = one process with both ranks' batch.
if [ "$GPUS" -lt 2 ] || [ -z "$MPIRUN" ]; then
  skip "two ranks: needs two GPUs and mpirun (found $GPUS GPU(s), mpirun: ${MPIRUN:-none})"
else
  for pair in "mlp16 mlp32" "gpt8 gpt16"; do
    read -r half whole <<< "$pair"
    one="$OUT/logs/$whole-one-process"
    two="$OUT/logs/$half-two-ranks"
    steps="$(steps_of "$half")"
    # shellcheck disable=SC2046
    if ! "$RUN" train "$A/$whole.tcc" --device cuda --steps "$steps" --no-shuffle \
      --no-progress --metrics "$one.jsonl" $(data_args "$whole") > "$one.log" 2>&1; then
      tail -n 5 "$one.log"; fail "$whole: one process ($one.log)"; continue
    fi
    # shellcheck disable=SC2046
    if ! NCCL_DEBUG=WARN timeout 600 "$MPIRUN" -np 2 --oversubscribe "$RUN" train "$A/$half.tcc" \
      --device cuda --steps "$steps" --no-shuffle --no-progress \
      --metrics "$two.jsonl" $(data_args "$half") > "$two.log" 2>&1; then
      tail -n 10 "$two.log"; fail "$half: two ranks ($two.log)"; continue
    fi
    if verdict="$("$PY" - "$one.jsonl" "$two.jsonl" "$TOL" <<'EOF'
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1]) if l.strip()]
b = [json.loads(l)["loss"] for l in open(sys.argv[2]) if l.strip()]
tol = float(sys.argv[3])
if len(a) != len(b) or not a:
    print(f"steps differ: {len(a)} and {len(b)}")
    sys.exit(1)
worst = max(abs(x - y) / max(abs(x), 1e-6) for x, y in zip(a, b))
print(f"{len(a)} steps, largest relative difference {worst:.2e} (tolerance {tol:g})")
sys.exit(0 if worst <= tol else 1)
EOF
)"; then
      pass "$half on two GPUs = $whole in one process: $verdict"
    else
      fail "$half on two GPUs against $whole in one process: $verdict"
    fi
  done
fi

{
  echo "# NCCL checks ($GPUS GPU(s), mpirun: ${MPIRUN:-none})"
  echo
  echo "| result | check |"
  echo "|---|---|"
  printf '%s\n' "${SUMMARY[@]}"
} > "$OUT/nccl.md"
echo "== $OUT/nccl.md"
[ "$FAILED" -eq 0 ] || exit 1
exit 0
