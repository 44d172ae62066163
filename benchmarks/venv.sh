#!/bin/bash
# Creates (once) the optional benchmark virtual environment: current PyTorch
# from PyPI, torchvision, onnx, numpy and ONNX Runtime Training. Never used by
# tests or CI, which rely on Debian's packages only. Prints the venv's python.
#
#   PY=$(benchmarks/venv.sh) && $PY benchmarks/cpu_vs_pytorch.py --model mlp
#
# TCC_BENCH_VENV picks the folder (default ~/.cache/tcc-bench-venv, shared by
# every checkout; benchmarks/.venv is git-ignored for a venv in the tree);
# TCC_BENCH_PYTHON the interpreter to build it from. Delete the folder to
# rebuild it with newer releases.
set -euo pipefail
VENV=${TCC_BENCH_VENV:-$HOME/.cache/tcc-bench-venv}
log() { echo "venv.sh: $*" >&2; }

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.complete" ]; then
  echo "$VENV/bin/python"
  exit 0
fi

# ONNX Runtime Training's last wheels (1.19.2) stop at CPython 3.11
# (onnxruntime-training) and 3.12 (onnxruntime-training-cpu), so prefer an
# interpreter one of them has; torch 2.x needs 3.10 or newer.
pick_python() {
  if [ -n "${TCC_BENCH_PYTHON:-}" ]; then echo "$TCC_BENCH_PYTHON"; return; fi
  for v in 3.12 3.11 3.10; do
    for p in "python$v" "$HOME/.pyenv/versions/$v"*/bin/python3; do
      if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import venv' 2>/dev/null; then
        command -v "$p"; return
      fi
    done
  done
  command -v python3
}
PYTHON=$(pick_python)
log "building $VENV from $PYTHON ($("$PYTHON" --version 2>&1))"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
"${PIP[@]}" -U pip uv >&2
UV=("$VENV/bin/uv" pip install --python "$VENV/bin/python" -q)

# CPU wheels where PyTorch's own index is reachable; PyPI's torch otherwise
# (it pulls in CUDA libraries it never loads on this machine).
if "${UV[@]}" --index-url https://download.pytorch.org/whl/cpu torch torchvision \
    >&2 2>/dev/null; then
  log "torch: CPU wheels from PyTorch's index"
else
  log "torch: PyTorch's CPU index unreachable, using PyPI's torch"
  "${UV[@]}" torch torchvision >&2
fi
"${UV[@]}" numpy onnx onnxscript >&2

# ONNX Runtime Training: its training API (onnxruntime.training) lives only in
# these packages; the plain onnxruntime wheel cannot train.
ORT=none
for pkg in onnxruntime-training onnxruntime-training-cpu; do
  if "${UV[@]}" "$pkg" >&2; then ORT=$pkg; break; fi
done
if [ "$ORT" = none ]; then
  log "WARNING: no onnxruntime-training wheel for $("$VENV/bin/python" --version);" \
      "the ORT rows will be missing"
fi
echo "$ORT" >"$VENV/.ort-package"
touch "$VENV/.complete"
echo "$VENV/bin/python"
