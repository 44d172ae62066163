#!/usr/bin/python3
"""A nanoGPT-style recipe against a constant learning rate, same steps.

The character GPT (examples/make_gpt.py) is trained on the bundled corpus,
split into a training part and a held-out tail, twice for the same number
of steps from the same weights and batches:

  constant  AdamW at a constant rate, weight decay on every parameter;
  recipe    the same peak rate with linear warmup and cosine decay
            (`tcc train --lr-schedule cosine --warmup-steps`), gradients
            clipped at global norm 1.0 (`tcc compile --clip-grad-norm`) and
            no decay on biases, norms and embeddings of rank < 2
            (`--no-decay 1d`).

Both evaluate the held-out loss every --eval-every steps (`--eval-tokens`)
and the script prints the two curves side by side, and with --report FILE
writes them as a Markdown table.

  /usr/bin/python3 examples/gpt_recipe.py --tcc build/tools/tcc/tcc
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
                 f"{p.stdout}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcc", default="build/tools/tcc/tcc")
    ap.add_argument("--work", default="build/gpt_recipe")
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--held-out", type=float, default=0.1,
                    help="the corpus' tail kept for evaluation")
    ap.add_argument("--report", help="write the curves as Markdown here")
    ap.add_argument("--smoke", action="store_true",
                    help="only check that both runs train and evaluate (a "
                         "short run's curves need not cross yet)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)

    corpus = open(os.path.join(HERE, "text", "licenses.txt"), "rb").read()
    cut = int(len(corpus) * (1 - args.held_out))
    train_f = os.path.join(args.work, "train.txt")
    eval_f = os.path.join(args.work, "heldout.txt")
    open(train_f, "wb").write(corpus[:cut])
    open(eval_f, "wb").write(corpus[cut:])

    onnx_f = os.path.join(args.work, "gpt.onnx")
    run([sys.executable, os.path.join(HERE, "make_gpt.py"), "-o", onnx_f])
    common = [args.tcc, "compile", onnx_f, "--batch", str(args.batch),
              "--freeze", "mask", "--optimizer", "adamw", "--lr", str(args.lr),
              "--weight-decay", "0.1"]
    runs = {
        "constant": (common, []),
        "recipe": (common + ["--clip-grad-norm", "1.0", "--no-decay", "1d"],
                   ["--lr-schedule", "cosine", "--warmup-steps",
                    str(args.warmup), "--min-lr", str(args.lr / 10)]),
    }
    curves = {}
    for name, (compile_cmd, train_flags) in runs.items():
        art = os.path.join(args.work, name + ".tcc")
        run(compile_cmd + ["-o", art])
        metrics = os.path.join(args.work, name + ".jsonl")
        run([args.tcc, "train", art, "--tokens", train_f, "--steps",
             str(args.steps), "--seed", "1", "--no-progress", "--metrics",
             metrics, "--eval-every", str(args.eval_every), "--eval-tokens",
             eval_f] + train_flags)
        lines = [json.loads(l) for l in open(metrics)]
        curves[name] = {l["step"]: l for l in lines}

    steps = sorted(s for s, l in curves["recipe"].items() if "eval_loss" in l)
    rows = ["| step | constant: lr | train loss | held-out loss | "
            "recipe: lr | train loss | held-out loss | grad norm |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in steps:
        c, r = curves["constant"][s], curves["recipe"][s]
        gn = r.get("grad_norm")
        rows.append(f"| {s} | {c['lr']:.2e} | {c['loss']:.4f} | "
                    f"{c['eval_loss']:.4f} | {r['lr']:.2e} | {r['loss']:.4f} | "
                    f"{r['eval_loss']:.4f} | "
                    f"{'' if gn is None else f'{gn:.3f}'} |")
    final = {k: curves[k][steps[-1]]["eval_loss"] for k in curves}
    table = "\n".join(rows)
    print(table)
    verdict = ("lower" if final["recipe"] < final["constant"] else
               "NOT lower")
    summary = (f"after {steps[-1]} steps the recipe's held-out loss is "
               f"{final['recipe']:.4f}, {verdict} than the constant rate's "
               f"{final['constant']:.4f}")
    print(summary)
    if args.report:
        with open(args.report, "w") as f:
            f.write(f"# Character GPT: nanoGPT-style recipe vs constant rate\n\n"
                    f"`examples/gpt_recipe.py --steps {args.steps} --lr "
                    f"{args.lr} --warmup {args.warmup} --batch {args.batch}` "
                    f"(CPU). Same initial weights and batch order; held-out: "
                    f"the corpus' last {args.held_out:.0%}.\n\n{table}\n\n"
                    f"{summary}.\n")
    if not args.smoke and final["recipe"] >= final["constant"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
