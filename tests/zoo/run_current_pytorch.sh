#!/bin/bash
# The model zoo's optional tier: the same models as the ctest zoo
# (tests/e2e/model_zoo.py, run by ctest on Debian's PyTorch 1.13), exported
# by current PyTorch from PyPI through both of its exporters:
#   torchscript: torch.onnx.export(dynamo=False, training=TRAINING,
#                do_constant_folding=False, opset_version=17)
#   dynamo:      torch.onnx.export(dynamo=True, optimize=False) of the model
#                in train() mode, weights in an external MODEL.onnx.data file,
#                compiled with --batchnorm=train (the exporter writes its batch
#                norms in inference mode)
# Then it runs Hugging Face transformers' own classes at toy sizes
# (tests/zoo/hf_models.py: GPT-2, BERT, DistilBERT, Llama, Qwen2, Mistral,
# T5, ViT) through both exporters with --set transformers: each one's
# gradients are checked like the zoo's, and 5 SGD steps' losses against
# float64 PyTorch's (--train-steps). ZOO_SETS="zoo transformers" (the
# default) picks the sets.
# It is not part of ctest or CI: it downloads PyTorch (a few GB with its
# CUDA libraries) and what it finds depends on the day's releases. The
# expectation table describes PyTorch 1.13's exports, so the zoo runs with
# --report-only here: it prints what each model does, and fails only on a
# gradient mismatch or a crash.
#
#   tests/zoo/run_current_pytorch.sh [BUILD_DIR] [extra model_zoo.py args]
#
# VENV (default BUILD_DIR/zoo-venv) is made once and reused.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build}"
shift || true
venv="${VENV:-$build/zoo-venv}"
tcc="$build/tools/tcc/tcc"
[ -x "$tcc" ] || { echo "no tcc at $tcc: build first" >&2; exit 1; }

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet torch torchvision onnx onnxscript numpy
fi
# A venv made before the transformers set existed lacks it.
"$venv/bin/python" -c 'import transformers' 2>/dev/null ||
  "$venv/bin/pip" install --quiet transformers
"$venv/bin/python" -c 'import torch, torchvision, onnx, onnxscript, transformers; print("torch", torch.__version__, "torchvision", torchvision.__version__, "onnx", onnx.__version__, "onnxscript", onnxscript.__version__, "transformers", transformers.__version__)'

status=0
for set in ${ZOO_SETS:-zoo transformers}; do
  steps=()
  [ "$set" = transformers ] && steps=(--train-steps 5)
  for exporter in torchscript dynamo; do
    echo "== set: $set, exporter: $exporter"
    python3 "$root/tests/e2e/model_zoo.py" --python "$venv/bin/python" \
      --set "$set" "${steps[@]}" --exporter "$exporter" --report-only \
      --tcc "$tcc" --work "$build/zoo-current/$set-$exporter" "$@" || status=1
  done
done
exit $status
