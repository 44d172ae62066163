#!/usr/bin/python3
"""Model zoo end to end: torchvision models and transformers in their
authors' styles (tests/e2e/zoo_models.py), exported from PyTorch, compiled
by tcc, and one training step's gradients checked against PyTorch.

Each model has an expectation in ZOO:

* `trains`: tcc compiles it, and one SGD step from the exported weights on a
  batch of 2 gives the loss and the gradient of every parameter PyTorch
  gives (and, with batch norm, the same updated running statistics). tcc's
  gradient is read back from a plain SGD step with lr GRAD_LR and no weight
  decay as (w - w') / lr, as resnet_parity.py does, and compared with a
  float64 copy of the PyTorch model: max |g_tcc - g| / max |g| per tensor
  within 1e-3, or within what float32 PyTorch's own error and the float64
  gradient's instability allow where batch 2 makes the problem
  ill-conditioned (see check_trains).
* `unsupported OP`: `tcc compile` must fail cleanly (an exit status, no
  signal) naming the first node it cannot import as
  `node '...' (op_type 'OP', opset N) is not supported`. When such a model
  compiles, the test fails and asks for the table to be updated, so the
  table stays true as ops are added.

Dropout and stochastic depth are set to p = 0: they draw random numbers
that PyTorch and tcc cannot share.

The exporter and interpreter are options so that the same script runs the
optional current-PyTorch tier (tests/zoo/run_current_pytorch.sh): there the
expectations describe PyTorch 1.13's TorchScript exports, so --report-only
prints what each model does without holding it to the table; a gradient
mismatch or a crash still fails. That tier also runs `--set transformers`:
Hugging Face's own classes at toy sizes (tests/zoo/hf_models.py, which
needs the `transformers` package), and `--train-steps N`, which after the
gradient check trains N SGD steps on the same batch with tcc and with
float64 PyTorch and compares every step's loss.
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys
import time
import traceback
import warnings

# tcc's gradient is (w - w') / GRAD_LR. Rounding w' costs eps * |w| / lr of
# the gradient: at lr 1000 that swamps gradients of 1e-7 on weights of 1
# (LayerNorm weights under ConvNeXt's layer scale of 1e-6), at 1e6 it
# does not, and lr * |g| stays far from float32's range.
GRAD_LR = 1e6
BATCH = 2
NOISE = 4  # see check_trains


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--exporter", choices=["torchscript", "dynamo"],
                    default="torchscript",
                    help="torch.onnx.export(dynamo=False) with training mode "
                    "and no constant folding, opset 17 (the only exporter of "
                    "PyTorch 1.x); or dynamo=True (PyTorch 2.x), its default "
                    "opset (18 or later)")
    ap.add_argument("--python", help="run the zoo under this interpreter "
                    "(one whose torch, torchvision and onnx to use)")
    ap.add_argument("--only", nargs="*", help="models to run (default: all)")
    ap.add_argument("--report-only", action="store_true",
                    help="report each model's outcome without holding it to "
                    "the expectation table")
    ap.add_argument("--set", choices=["zoo", "transformers"], default="zoo",
                    help="zoo: the models of zoo_models.py and torchvision "
                    "(the ctest zoo); transformers: Hugging Face's own "
                    "classes (tests/zoo/hf_models.py, needs transformers)")
    ap.add_argument("--train-steps", type=int, default=0,
                    help="after the gradient check, train this many SGD "
                    "steps (lr --train-lr) on the same batch and compare "
                    "each step's loss with float64 PyTorch's")
    ap.add_argument("--train-lr", type=float, default=0.5)
    return ap.parse_args()


ARGS = parse_args()
if ARGS.python and os.path.abspath(ARGS.python) != os.path.abspath(sys.executable):
    # Re-run under the requested interpreter before importing torch. Paths
    # are compared unresolved: a virtual environment's python is a link to
    # the system's, and only its own path selects the environment.
    argv = [a for i, a in enumerate(sys.argv) if a != "--python" and
            (i == 0 or sys.argv[i - 1] != "--python") and not a.startswith("--python=")]
    os.execv(ARGS.python, [ARGS.python] + argv)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.numpy_helper  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo_models as zm  # noqa: E402


def image(size):
    # Batch norm over the 2 values of a 1x1 map at batch 2 gives +-1 whose
    # sign float rounding decides (float32 PyTorch's loss then differs from
    # float64's by 30%), so networks that downsample 32x see 64x64 images
    # and end on 2x2 maps (resnet18 96x96); the others 32x32.
    def data():
        return ({"x": torch.randn(BATCH, 3, size, size)},
                torch.randint(0, zm.CLASSES, (BATCH,)))
    return data


def tokens():
    return ({"input_ids": torch.randint(0, zm.VOCAB, (BATCH, zm.SEQ))},
            torch.randint(0, zm.VOCAB, (BATCH, zm.SEQ)))


def bert_inputs():
    ids = torch.randint(1, zm.VOCAB, (BATCH, zm.SEQ))
    types = torch.zeros(BATCH, zm.SEQ, dtype=torch.long)
    types[:, zm.SEQ // 2:] = 1  # sentence B
    mask = torch.ones(BATCH, zm.SEQ, dtype=torch.long)
    # The second sequence is padded: its last 5 keys are masked. Its ids
    # there are not the pad id 0, because nn.Embedding's padding_idx (no
    # gradient into row 0) is not in the ONNX graph: exported, row 0 trains
    # like any other (a difference of the export, not of tcc).
    mask[1, -5:] = 0
    return ({"input_ids": ids, "token_type_ids": types, "attention_mask": mask},
            torch.randint(0, zm.VOCAB, (BATCH, zm.SEQ)))


class Case:
    def __init__(self, name, build, data, expect, freeze=(), why=""):
        self.name, self.build, self.data = name, build, data
        self.expect = expect  # "trains" or ("unsupported", OP)
        self.freeze = list(freeze)  # buffers used differentiably
        self.why = why


# The expectation table (PyTorch 1.13, TorchScript exporter, opset 17).
# The op named is the first node tcc refuses in graph order.
ZOO = [
    # At 64x64 this batch puts a ReLU of layer4 at a kink (float32 and
    # float64 PyTorch differ by 2e-1); at 96x96 it is well-conditioned.
    Case("resnet18", zm.resnet18, image(96), "trains"),
    Case("mobilenet_v2", zm.mobilenet_v2, image(64), "trains"),  # ReLU6: Clip
    Case("mobilenet_v3_small", zm.mobilenet_v3_small, image(64), "trains"),
    Case("efficientnet_b0", zm.efficientnet_b0, image(64), "trains"),
    Case("squeezenet1_1", zm.squeezenet1_1, image(32), "trains"),
    Case("densenet_small", zm.densenet_small, image(64), "trains"),
    Case("shufflenet_v2_x0_5", zm.shufflenet_v2_x0_5, image(64), "trains"),
    Case("regnet_y_400mf", zm.regnet_y_400mf, image(64), "trains"),
    Case("convnext_small_cfg", zm.convnext_tiny_cfg, image(32), "trains"),
    Case("vgg11_small", zm.vgg11_small, image(32), "trains"),
    Case("googlenet", zm.googlenet, image(64), "trains"),
    Case("vit_tiny", zm.vit_tiny, image(32), "trains"),
    Case("gpt2", zm.GPT2LMHeadModel, tokens, "trains"),
    Case("bert", zm.BertForMaskedLM, bert_inputs, "trains"),
    # Llama's rotary cos/sin tables are non-persistent buffers, which the
    # TorchScript exporter writes as Constant nodes: nothing to --freeze.
    # (Case.freeze is for exported buffers used differentiably, such as an
    # additive mask of finite values; nanoGPT's tril buffer only feeds
    # Equal, so tcc keeps it constant by itself.)
    Case("llama", zm.LlamaForCausalLM, tokens, "trains"),
    # T5's relative position buckets (Abs, Log, Div, Cast, Min, Where on
    # constants) fold at import.
    Case("t5", zm.T5EncoderLM, tokens, "trains"),
    Case("nanogpt", zm.NanoGPT, tokens, "trains"),
]


def transformers_zoo():
    """Hugging Face's classes (optional tier): every one is expected to
    train; the tier runs them with --report-only."""
    sys.path.insert(0, os.path.join(HERE, "..", "zoo"))
    import hf_models  # noqa: E402
    print(hf_models.describe())
    return [Case(name, build, data(BATCH), "trains")
            for name, build, data in hf_models.MODELS]

UNSUPPORTED_RE = re.compile(
    r"node '([^']*)' \(op_type '([^']+)', (?:domain '[^']*', )?opset (\d+)\) "
    r"is not supported")


def no_randomness(model):
    """Dropout and stochastic depth off: their random draws cannot match."""
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if type(m).__name__ == "StochasticDepth":
            m.p = 0.0


def export(model, inputs, path):
    names = list(inputs)
    args = tuple(inputs[n] for n in names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if ARGS.exporter == "torchscript":
            kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
            torch.onnx.export(model, args, path, input_names=names,
                              output_names=["logits"], opset_version=17,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, **kw)
        else:
            # The model is in train() mode; optimize=False keeps the graph
            # as the module computes it (README, "Exporting from PyTorch").
            torch.onnx.export(model, args, path, input_names=names,
                              output_names=["logits"], dynamo=True,
                              optimize=False, external_data=True)


def initializers(path):
    return {t.name: onnx.numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}


def aliases(model):
    """state_dict names grouped by storage: a tied weight has two names
    (lm_head.weight, wte.weight) and the export keeps one."""
    groups = {}
    for k, v in model.state_dict(keep_vars=True).items():
        groups.setdefault((v.data_ptr(), tuple(v.shape)), []).append(k)
    return {k: g for g in groups.values() for k in g}


def sync_from_export(model, init):
    """Loads the exported initializers back: tracing in training mode moves
    batch-norm running statistics, and both sides must start equal. Returns
    each parameter's initializer name."""
    alias = aliases(model)
    state = model.state_dict()
    with torch.no_grad():
        for k, v in state.items():
            for a in alias[k]:
                if a in init:
                    v.copy_(torch.from_numpy(init[a].copy()))
                    break
    where, missing = {}, []
    for n, _ in model.named_parameters():
        found = [a for a in alias[n] if a in init]
        if found:
            where[n] = found[0]
        else:
            missing.append(n)
    if missing:
        raise Failure(f"the export has no initializer for parameters {missing}")
    return where


class Failure(Exception):
    pass


class ExportFailed(Exception):
    """PyTorch's exporter raised: tcc never saw the model. With
    --report-only it is an outcome to report (a limitation of that
    exporter on that model), not a failure of tcc."""


PHASES = {}  # seconds per phase of the current model, for the log


def timed(phase, f, *a, **kw):
    t = time.time()
    try:
        return f(*a, **kw)
    finally:
        PHASES[phase] = PHASES.get(phase, 0.0) + time.time() - t


def run(cmd, **kw):
    return timed(os.path.basename(cmd[0]) + " " + cmd[1], subprocess.run, cmd,
                 capture_output=True, text=True, **kw)


def compile_cmd(case, onnx_path, art):
    cmd = [ARGS.tcc, "compile", onnx_path, "-o", art, "--batch", str(BATCH),
           "--optimizer", "sgd", "--lr", str(GRAD_LR), "--weight-decay", "0"]
    if case.freeze:
        cmd += ["--freeze", ",".join(case.freeze)]
    if ARGS.exporter == "dynamo":
        # The dynamo exporter writes train()-mode batch norm in inference
        # mode (README, "Exporting from PyTorch").
        cmd += ["--batchnorm=train"]
    return cmd


def refusal(p):
    """(op, message) of a clean refusal; raises on a crash."""
    if p.returncode < 0:
        raise Failure(f"tcc compile died of signal {-p.returncode}:\n{p.stderr[-2000:]}")
    m = UNSUPPORTED_RE.search(p.stderr)
    return (m.group(2) if m else None), p.stderr.strip().splitlines()[0][:200] \
        if p.stderr.strip() else f"exit {p.returncode}, no message"


def torch_step(model, inputs, labels, dtype):
    m = copy.deepcopy(model)
    if dtype == torch.float64:
        m = m.double()
    m.zero_grad()
    args = [v.to(dtype) if v.dtype.is_floating_point else v for v in inputs.values()]
    out = m(*args)
    loss = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]),
                                       labels.reshape(-1))
    loss.backward()
    grads = {n: (p.grad if p.grad is not None else torch.zeros_like(p)).numpy().copy()
             for n, p in m.named_parameters()}
    stats = {n: v.numpy().copy() for n, v in m.state_dict().items()
             if "running_" in n}
    return loss.item(), grads, stats


def reference_spread(model, inputs, labels, g64, err):
    """Per tensor, how far float64 PyTorch's gradient moves when the float
    inputs move by 1e-6 of themselves (0 for models on token ids)."""
    spread = {n: 0.0 for n in g64}
    if not any(v.dtype.is_floating_point for v in inputs.values()):
        return spread
    for k in range(3):
        gen = torch.Generator().manual_seed(100 + k)
        moved = {n: v.double() * (1 + 1e-6 * torch.randn(v.shape, generator=gen,
                                                          dtype=torch.float64))
                 if v.dtype.is_floating_point else v for n, v in inputs.items()}
        _, g, _ = torch_step(model, moved, labels, torch.float64)
        for n in spread:
            spread[n] = max(spread[n], err(g[n], g64[n]))
    return spread


def check_trains(case, d, model, inputs, labels, where, init):
    art = os.path.join(d, "sgd.tcc")
    p = run(compile_cmd(case, os.path.join(d, "model.onnx"), art))
    if p.returncode != 0:
        op, msg = refusal(p)
        raise Failure(f"tcc compile failed: {msg}")
    data_args = []
    for n, v in list(inputs.items()) + [("labels", labels)]:
        np.save(os.path.join(d, n + ".npy"), v.numpy())
        data_args += ["--data", f"{n}={os.path.join(d, n + '.npy')}"]
    cmd = [ARGS.tcc, "train", art, "--steps", "1", "--no-shuffle", "--no-progress",
           "--metrics", os.path.join(d, "sgd.jsonl"),
           "--export", os.path.join(d, "sgd.onnx")] + data_args
    p = run(cmd)
    if p.returncode != 0:
        raise Failure(f"tcc train failed ({p.returncode}): {p.stderr.strip()[-1500:]}")
    tcc_loss = json.loads(open(os.path.join(d, "sgd.jsonl")).readline())["loss"]
    after = initializers(os.path.join(d, "sgd.onnx"))

    loss32, g32, _ = timed("torch", torch_step, model, inputs, labels, torch.float32)
    loss64, g64, stats64 = timed("torch", torch_step, model, inputs, labels,
                                 torch.float64)
    # Where float32 itself is ill-conditioned (a batch-norm weight's gradient
    # sums terms that cancel), float32 PyTorch strays from float64 too, by
    # an amount that shifts with the order of the sums: tcc may stray up to
    # NOISE times as far, per tensor.
    torch_loss_err = abs(loss32 - loss64) / abs(loss64)
    if abs(tcc_loss - loss64) > max(1e-4, NOISE * torch_loss_err) * abs(loss64):
        raise Failure(f"loss {tcc_loss:.7f}, float64 PyTorch {loss64:.7f} "
                      f"(float32 PyTorch {loss32:.7f})")
    # A gradient that is zero in exact arithmetic (a key bias under softmax,
    # whose shift cancels) is rounding noise in float32: each tensor is
    # measured against at least 1e-5 of the largest gradient of the model.
    floor = 1e-5 * max(float(np.max(np.abs(g))) for g in g64.values())

    def err(a, ref):
        return float(np.max(np.abs(a - ref))) / max(float(np.max(np.abs(ref))), floor)

    # At batch 2 a pre-activation within rounding of a ReLU's kink (SE
    # blocks' hidden ReLU sees 2 pooled vectors) flips whole channels'
    # gradients: the gradient itself is unstable, and a float32 run that
    # rounds the other way differs by 1e-1 (regnet_y_400mf). Three float64
    # runs on inputs moved by 1e-6 (relative) measure that instability per
    # tensor; tcc may differ by up to twice as much.
    spread = timed("torch", reference_spread, model, inputs, labels, g64, err)
    worst, worst_name, torch_worst, bad = 0.0, "", 0.0, {}
    for n, ref in g64.items():
        w = where[n]
        g_tcc = (init[w].astype(np.float64) - after[w]) / GRAD_LR
        e, e32 = err(g_tcc, ref), err(g32[n], ref)
        torch_worst = max(torch_worst, e32)
        if e >= worst:
            worst, worst_name = e, n
        if e > max(1e-3, NOISE * e32, 2 * spread[n]):
            bad[n] = (e, e32, spread[n])
    if bad:
        listed = ", ".join(f"{n} {e:.1e} (float32 PyTorch {e32:.1e}, spread {sp:.1e})"
                           for n, (e, e32, sp)
                           in sorted(bad.items(), key=lambda t: -t[1][0])[:5])
        raise Failure(f"{len(bad)} of {len(g64)} gradients differ: {listed}")
    # Running statistics start at 0 and 1 and move by a tenth of the batch's
    # statistics: a mean that is zero in exact arithmetic (the mean of a
    # 1x1 convolution of batch-normalized input) is compared at 1e-2.
    for n, ref in stats64.items():
        r = float(np.max(np.abs(after[n] - ref))) / max(float(np.max(np.abs(ref))), 1e-2)
        if r > 1e-4:
            raise Failure(f"running statistic {n} differs: {r:.2e}")
    steps = (check_steps(d, art, model, inputs, labels, data_args)
             if ARGS.train_steps else None)
    return worst, worst_name, torch_worst, max(spread.values()), steps


def torch_losses(model, inputs, labels, dtype, steps, lr):
    m = copy.deepcopy(model)
    if dtype == torch.float64:
        m = m.double()
    opt = torch.optim.SGD(m.parameters(), lr=lr)
    args = [v.to(dtype) if v.dtype.is_floating_point else v for v in inputs.values()]
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = m(*args)
        loss = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]),
                                           labels.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def check_steps(d, art, model, inputs, labels, data_args):
    """ARGS.train_steps SGD steps on the one batch, from the exported
    weights: the artifact's rate is a run-time value, so the gradient
    check's artifact trains at --train-lr. Returns the largest relative
    loss difference from float64 PyTorch, and the first and last loss."""
    n, lr = ARGS.train_steps, ARGS.train_lr
    metrics = os.path.join(d, "steps.jsonl")
    p = run([ARGS.tcc, "train", art, "--steps", str(n), "--lr", str(lr),
             "--no-shuffle", "--no-progress", "--metrics", metrics] + data_args)
    if p.returncode != 0:
        raise Failure(f"tcc train --steps {n} failed ({p.returncode}): "
                      f"{p.stderr.strip()[-1500:]}")
    got = [json.loads(line)["loss"] for line in open(metrics)]
    ref = timed("torch", torch_losses, model, inputs, labels, torch.float64, n, lr)
    ref32 = timed("torch", torch_losses, model, inputs, labels, torch.float32, n, lr)
    if len(got) != n:
        raise Failure(f"tcc train --steps {n} reported {len(got)} steps")
    err = max(abs(a - b) / abs(b) for a, b in zip(got, ref))
    err32 = max(abs(a - b) / abs(b) for a, b in zip(ref32, ref))
    if err > max(1e-3, NOISE * err32):
        raise Failure(f"{n} SGD steps (lr {lr}): tcc losses "
                      f"{', '.join(f'{x:.5f}' for x in got)}, float64 PyTorch "
                      f"{', '.join(f'{x:.5f}' for x in ref)}")
    if not ref[-1] < ref[0]:
        raise Failure(f"{n} SGD steps at lr {lr} do not lower the loss "
                      f"({ref[0]:.5f} to {ref[-1]:.5f}): pick another --train-lr")
    return err, got[0], got[-1]


def run_case(case):
    d = os.path.join(ARGS.work, case.name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    model = case.build()
    no_randomness(model)
    model.train()
    inputs, labels = case.data()
    onnx_path = os.path.join(d, "model.onnx")
    try:
        timed("export", export, model, inputs, onnx_path)
    except Exception as e:
        if os.environ.get("ZOO_TRACE"):
            traceback.print_exc()
        cause = e
        while cause.__cause__ is not None:  # the exporter wraps the reason
            cause = cause.__cause__
        first = next((line for line in str(cause).splitlines() if line.strip()), "")
        raise ExportFailed(f"{type(cause).__name__}: {first[:300]}") from e
    init = initializers(onnx_path)
    where = sync_from_export(model, init)
    params = sum(p.numel() for p in model.parameters())

    expect = None if ARGS.report_only else case.expect
    if expect is not None and expect != "trains":
        p = run(compile_cmd(case, onnx_path, os.path.join(d, "probe.tcc")))
        if p.returncode == 0:
            raise Failure(f"listed as unsupported ({expect[1]}) but it compiles now: "
                          "update ZOO in tests/e2e/model_zoo.py to 'trains'")
        op, msg = refusal(p)
        if op != expect[1]:
            raise Failure(f"listed as unsupported ({expect[1]}) but tcc compile "
                          f"says: {msg}")
        return params, f"unsupported {op}", None
    if expect is None:  # report-only: whatever it does, say so
        p = run(compile_cmd(case, onnx_path, os.path.join(d, "probe.tcc")))
        if p.returncode != 0:
            op, msg = refusal(p)
            return params, f"unsupported {op}" if op else f"refused: {msg}", None
    grad = check_trains(case, d, model, inputs, labels, where, init)
    return params, "trains", grad


def main():
    # One thread: on a machine as busy as CI's, two spinning OpenMP
    # threads cost more than they give on models this small.
    torch.set_num_threads(1)
    os.makedirs(ARGS.work, exist_ok=True)
    table = transformers_zoo() if ARGS.set == "transformers" else ZOO
    cases = [c for c in table if not ARGS.only or c.name in ARGS.only]
    print(f"PyTorch {torch.__version__}, exporter {ARGS.exporter}, tcc {ARGS.tcc}")
    rows, failures = [], []
    start = time.time()
    for case in cases:
        t = time.time()
        PHASES.clear()
        try:
            params, status, grad = run_case(case)
            ok = True
        except Failure as e:
            params, status, grad, ok = None, f"FAIL: {e}", None, False
            failures.append(case.name)
        except ExportFailed as e:
            params, status, grad = None, f"export failed ({e})", None
            ok = ARGS.report_only
            if not ok:
                failures.append(case.name)
        except Exception as e:  # an exporter error is a finding too
            if os.environ.get("ZOO_TRACE"):
                traceback.print_exc()
            params, status, grad, ok = None, f"FAIL ({type(e).__name__}): {e}", None, False
            failures.append(case.name)
        secs = time.time() - t
        rows.append((case.name, params, status, grad, secs))
        g = (f"grad err {grad[0]:.1e} ({grad[1]}; float32 PyTorch {grad[2]:.1e}, "
             f"float64 spread {grad[3]:.1e})"
             if grad else "")
        if grad and grad[4]:
            g += (f"; {ARGS.train_steps} steps: loss {grad[4][1]:.4f} -> "
                  f"{grad[4][2]:.4f}, max rel err {grad[4][0]:.1e}")
        phases = ", ".join(f"{k} {v:.1f}" for k, v in PHASES.items())
        print(f"{case.name}: {status} {g} [{secs:.1f}s: {phases}]", flush=True)

    steps = f" {'steps loss err':>14}" if ARGS.train_steps else ""
    print(f"\n{'model':<20} {'params':>9}  {'status':<22} {'max rel grad err':>16}"
          f" {'torch f32':>9} {'f64 spread':>10}{steps} {'seconds':>7}")
    for name, params, status, grad, secs in rows:
        short = ("FAIL" if status.startswith("FAIL") else  # details above
                 "export failed" if status.startswith("export failed") else status)
        st = (f" {f'{grad[4][0]:.1e}' if grad and grad[4] else '-':>14}"
              if ARGS.train_steps else "")
        print(f"{name:<20} {params if params is not None else '-':>9}  {short:<22} "
              f"{f'{grad[0]:.1e}' if grad else '-':>16} "
              f"{f'{grad[2]:.1e}' if grad else '-':>9} "
              f"{f'{grad[3]:.1e}' if grad else '-':>10}{st} {secs:>7.1f}")
    print(f"total {time.time() - start:.0f}s")
    if failures:
        sys.exit(f"model zoo: {len(failures)} failed: {', '.join(failures)}")


if __name__ == "__main__":
    main()
