#!/usr/bin/env python3
"""Checks the gradients of @train_step against central finite differences.

Reads a module in generic form (tcc-opt --mlir-print-op-generic) whose
@train_step returns the loss followed by `grad` results, evaluates it with
NumPy in float64 (random params and inputs, fixed seed), and prints one line
per parameter: `gradcheck <name>: OK` or `gradcheck <name>: FAIL ...`.
The op semantics here follow the op descriptions in dialects/tcc/TccOps.td.
"""
import argparse
import re
import sys

import numpy as np


def split_top(s):
    """Splits on commas that are not nested in brackets."""
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += ch in "<([{"
        depth -= ch in ">)]}"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def tensor_type(t):
    body = re.fullmatch(r"tensor<(.*)>", t.strip()).group(1).split("x")
    return tuple(int(d) for d in body[:-1]), body[-1]


def parse_attrs(s):
    attrs = {}
    for item in split_top(s):
        key, value = (x.strip() for x in item.split("=", 1))
        if value.startswith("array<i64"):
            body = value[len("array<i64"):-1].lstrip(":").strip()
            attrs[key] = [int(x) for x in body.split(",")] if body else []
        elif value in ("true", "false"):
            attrs[key] = value == "true"
        elif value.startswith("dense<"):
            m = re.fullmatch(r"dense<(.*)> : (tensor<.*>)", value)
            shape, _ = tensor_type(m.group(2))
            data = np.array(eval(m.group(1)), dtype=np.float64)
            attrs[key] = np.broadcast_to(data, shape).copy()
        elif value.startswith('"'):
            attrs[key] = value.strip('"')
        else:
            attrs[key] = float(value.split(":")[0])
    return attrs


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def matmul(a, b, ta, tb):
    return np.matmul(np.swapaxes(a, -1, -2) if ta else a,
                     np.swapaxes(b, -1, -2) if tb else b)


def onehot(labels, like):
    out = np.zeros_like(like)
    np.put_along_axis(out, labels.astype(np.int64)[..., None], 1.0, -1)
    return out


def evaluate(op, x, a, shape):
    if op == "constant": return a["value"]
    if op == "matmul": return matmul(x[0], x[1], a.get("transpose_lhs"), a.get("transpose_rhs"))
    if op == "add": return x[0] + x[1]
    if op == "sub": return x[0] - x[1]
    if op == "mul": return x[0] * x[1]
    if op == "div": return x[0] / x[1]
    if op == "neg": return -x[0]
    if op == "relu": return np.maximum(x[0], 0)
    if op == "relu_grad": return np.where(x[1] > 0, x[0], 0.0)
    if op == "reshape": return x[0].reshape(shape)
    if op == "broadcast_to": return np.broadcast_to(x[0], shape).copy()
    if op == "transpose": return np.transpose(x[0], a["perm"])
    if op in ("reduce_sum", "reduce_mean"):
        f = np.sum if op == "reduce_sum" else np.mean
        return f(x[0], axis=tuple(a["axes"]), keepdims=a.get("keepdims", False))
    if op == "softmax": return softmax(x[0], int(a["axis"]))
    if op == "log_softmax": return log_softmax(x[0], int(a["axis"]))
    if op == "softmax_grad":
        dy, y = x
        return y * (dy - (dy * y).sum(axis=int(a["axis"]), keepdims=True))
    if op == "log_softmax_grad":
        dy, y = x
        return dy - np.exp(y) * dy.sum(axis=int(a["axis"]), keepdims=True)
    if op == "compare":
        return {"eq": np.equal, "lt": np.less, "le": np.less_equal,
                "gt": np.greater, "ge": np.greater_equal}[a["predicate"]](x[0], x[1])
    if op == "cast": return x[0].astype(np.float64)
    if op == "maximum": return np.maximum(x[0], x[1])
    if op == "softmax_cross_entropy":
        # PyTorch's CrossEntropyLoss(ignore_index, label_smoothing); 0
        # when every label is ignored.
        logits, labels = x
        ignore, s = a.get("ignore_index", -100), a.get("label_smoothing", 0.0)
        keep = labels != ignore
        if not keep.any():
            return 0.0
        logp = log_softmax(logits, -1)[keep]
        picked = np.take_along_axis(logp, labels[keep].astype(np.int64)[..., None], -1)
        return ((1 - s) * -picked[..., 0] + s * -logp.mean(-1)).mean()
    if op == "softmax_cross_entropy_grad":
        # g is the gradient per counted position.
        g, logits, labels = x
        ignore, s = a.get("ignore_index", -100), a.get("label_smoothing", 0.0)
        keep = (labels != ignore)[..., None]
        safe = np.where(labels != ignore, labels, 0)
        target = (1 - s) * onehot(safe, logits) + s / logits.shape[-1]
        return np.where(keep, g * (softmax(logits, -1) - target), 0.0)
    if op == "mse_loss": return ((x[0] - x[1]) ** 2).mean()
    if op == "mse_loss_grad": return x[0] * 2 * (x[1] - x[2]) / x[1].size
    sys.exit(f"gradcheck: no semantics for tcc.{op}")


class Function:
    def __init__(self, text, name):
        funcs = text.split('"func.func"()')[1:]
        func = next(f for f in funcs if f'sym_name = "{name}"' in f.split("\n")[0])
        header = func.split("\n")[0]
        self.arg_attrs = self._dicts(header, "arg_attrs")
        self.res_attrs = self._dicts(header, "res_attrs")
        m = re.search(r"\^bb0\((.*?)\):\n(.*?)\n\s*\"func.return\"\((.*?)\)", func, re.S)
        args = split_top(m.group(1))
        self.args = [a.split(":")[0].strip() for a in args]
        self.arg_types = [tensor_type(a.split(":", 1)[1]) for a in args]
        self.body = []
        for line in m.group(2).strip().split("\n"):
            om = re.fullmatch(r'\s*(%[\w]+)(?::\d+)? = "tcc\.(\w+)"\((.*?)\)(?: <\{(.*)\}>)? : \(.*\) -> (.*)', line)
            if not om:
                sys.exit("gradcheck: cannot read: " + line)
            res, op, operands, attrs, rtype = om.groups()
            self.body.append((res, op, [o.strip() for o in operands.split(",") if o.strip()],
                              parse_attrs(attrs) if attrs else {}, tensor_type(rtype)[0]))
        self.results = [r.strip() for r in m.group(3).split(",")]

    @staticmethod
    def _dicts(header, key):
        m = re.search(key + r" = \[(.*?)\]", header)
        return [dict(re.findall(r'(tcc\.\w+) = "([^"]*)"', d))
                for d in re.findall(r"\{([^{}]*)\}", m.group(1))] if m else []

    def run(self, env):
        env = dict(env)
        for res, op, operands, attrs, shape in self.body:
            y = np.asarray(evaluate(op, [env[o] for o in operands], attrs, shape), dtype=np.float64)
            assert y.shape == shape, (op, y.shape, shape)
            env[res] = y
        return [env[r] for r in self.results]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--tol", type=float, default=1e-5)
    opts = parser.parse_args()
    f = Function(sys.stdin.read(), "train_step")
    rng = np.random.default_rng(0)
    env = {}
    for name, (shape, etype) in zip(f.args, f.arg_types):
        env[name] = (rng.integers(0, opts.classes, size=shape).astype(np.float64)
                     if etype == "i64" else 0.5 * rng.standard_normal(shape) + 0.25)
    grads = dict(zip((r.get("tcc.name") for r in f.res_attrs), f.run(env)))
    failed = False
    for arg, attrs in zip(f.args, f.arg_attrs):
        if attrs.get("tcc.kind") != "param":
            continue
        name = attrs["tcc.name"]
        x, numeric, h = env[arg], np.zeros_like(env[arg]), 1e-6
        for idx in np.ndindex(x.shape):
            old = x[idx]
            x[idx] = old + h
            plus = f.run(env)[0]
            x[idx] = old - h
            minus = f.run(env)[0]
            x[idx] = old
            numeric[idx] = (plus - minus) / (2 * h)
        err = np.abs(numeric - grads[name]).max() / max(np.abs(numeric).max(), 1e-12)
        ok = err < opts.tol
        failed |= not ok
        print(f"gradcheck {name}: " + ("OK" if ok else f"FAIL (relative error {err:.3g})"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
