#!/usr/bin/python3
"""Token corpora at scale and evaluation while training, end to end.

examples/make_gpt.py's character model (T=32, batch 4) trained by `tcc train`
on the bundled text written as token shards. Checks:
  1. formats: the text as one u8 file, as a nanoGPT raw u16 file and as three
     llm.c shards (u16 header, by glob and by directory) gives the same
     losses when the windows are the same (one shard: the u16 files);
  2. resume with a shard corpus: a run killed after step 5 and resumed from
     its step-4 checkpoint has the losses of the uninterrupted run;
  3. a corpus larger than what the process holds: 2 sparse llm.c shards of
     128 MiB each train a few shuffled steps while the process's peak RSS
     grows by far less than the corpus;
  4. --eval-every with --eval-tokens: eval_loss / eval_ppl on the metrics
     lines of the steps it ran, on the progress line and at the end; the
     loss equals the next training step's on the same windows (a second run,
     one step longer, trains on them);
  5. --eval-every with --eval-data on the MLP: eval_loss and eval_accuracy;
  6. each new error: --eval-every without data, eval data of the wrong
     shape, a glob matching nothing, bad headers (version, count beyond the
     file, a damaged magic among shards), a width that contradicts the
     header, a token beyond the vocabulary.
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
T, BATCH = 32, 4


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd, expect_rc=0, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != expect_rc:
        fail(f"exit {p.returncode} (expected {expect_rc}): {' '.join(cmd)}\n"
             f"{p.stdout}\n{p.stderr}")
    return p


def llmc_shard(path, tokens, u32=False, version=None, count=None):
    header = np.zeros(256, dtype=np.int32)
    header[0] = 20240801 if u32 else 20240520
    header[1] = version if version is not None else (7 if u32 else 1)
    header[2] = len(tokens) if count is None else count
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype=np.uint32 if u32 else np.uint16).tobytes())


def losses(path):
    return [json.loads(l)["loss"] for l in open(path)]


class Gpt:
    def __init__(self, args, work):
        self.tcc, self.tcc_run, self.work = args.tcc, args.tcc_run, work
        onnx_path = os.path.join(work, "gpt.onnx")
        run([sys.executable, os.path.join(args.examples, "make_gpt.py"),
             "-o", onnx_path, "--seq", str(T)])
        self.art = os.path.join(work, "gpt.tcc")
        run([self.tcc, "compile", onnx_path, "-o", self.art, "--batch",
             str(BATCH), "--freeze", "mask"])

    def train(self, name, data, *extra, expect_rc=0, env=None):
        metrics = os.path.join(self.work, name + ".jsonl")
        p = run([self.tcc, "train", self.art, "--tokens", data, "--metrics",
                 metrics, *extra], expect_rc=expect_rc, env=env)
        return p, metrics


def formats(g, text):
    d = os.path.join(g.work, "shards")
    os.makedirs(d, exist_ok=True)
    u8 = os.path.join(g.work, "text_u8.bin")
    text.tofile(u8)
    raw16 = os.path.join(g.work, "text_u16.bin")  # nanoGPT's prepare.py
    text.astype(np.uint16).tofile(raw16)
    one = os.path.join(g.work, "one_shard.bin")
    llmc_shard(one, text)
    thirds = np.array_split(text, 3)
    for i, part in enumerate(thirds):
        llmc_shard(os.path.join(d, f"train_{i:06d}.bin"), part)
    common = ["--steps", "6", "--no-progress", "--seed", "1"]
    ref = losses(g.train("u8", u8, *common)[1])
    if losses(g.train("raw16", raw16, "--token-type", "u16", *common)[1]) != ref:
        fail("a raw u16 file trains differently from the same tokens as u8")
    if losses(g.train("one", one, *common)[1]) != ref:
        fail("an llm.c shard trains differently from the same tokens as u8")
    by_glob = losses(g.train("glob", os.path.join(d, "train_*.bin"), *common)[1])
    by_dir = losses(g.train("dir", d, *common)[1])
    if by_glob != by_dir:
        fail("the shards by glob and by directory train differently")
    # Three shards hold (n_i - 1) // T windows each, none across two.
    windows = sum((len(p) - 1) // T for p in thirds)
    print(f"formats: u8, raw u16, llm.c shard alike; 3 shards by glob = by "
          f"directory")
    return d, windows


def manifest(path):
    """The JSON manifest of a checkpoint file (Checkpoint.h's layout)."""
    with open(path, "rb") as f:
        head = f.read(64)
        (length,) = struct.unpack("<Q", head[16:24])
        return json.loads(f.read(length))


def resume(g, shards, windows, tokens):
    ck = os.path.join(g.work, "ck")
    common = ["--steps", "8", "--no-progress", "--seed", "2"]
    ref = losses(g.train("ref", shards, *common)[1])
    env = dict(os.environ, TCC_TEST_KILL_AFTER_STEP="5")
    g.train("killed", shards, *common, "--checkpoint-dir", ck,
            "--checkpoint-every", "4", expect_rc=-signal.SIGKILL, env=env)
    p, m = g.train("killed", shards, *common, "--checkpoint-dir", ck,
                   "--checkpoint-every", "4", "--resume", ck)
    if "at step 4 of 8" not in p.stderr:
        fail("resume should continue at step 4:\n" + p.stderr)
    if losses(m) != ref:
        fail(f"the resumed shard run's losses {losses(m)} differ from {ref}")
    # The checkpoint identifies the corpus and where the feeder stands.
    man = manifest(os.path.join(ck, "ckpt-00000008.tcckpt"))
    data, feeder = man["run"]["data"][0], man["feeder"]
    if (data["dtype"], data["shape"]) != ("tokens u16", [tokens, windows]):
        fail(f"checkpoint data identity {data}: expected u16 tokens "
             f"[{tokens}, {windows}]")
    if (feeder["batches_per_epoch"], feeder["next_batch"]) != (windows // BATCH, 8):
        fail(f"checkpoint feeder position {feeder}")
    print("resume: a shard run killed at step 5 resumes at step 4 with the "
          "same losses")


def big_corpus(g):
    d = os.path.join(g.work, "big")
    os.makedirs(d, exist_ok=True)
    shard_bytes = 128 << 20
    for i in range(2):
        path = os.path.join(d, f"big_{i}.bin")
        with open(path, "wb") as f:
            f.write(struct.pack("<3i", 20240520, 1, (shard_bytes - 1024) // 2))
            f.truncate(shard_bytes)  # sparse: the tokens read as 0
    p, _ = g.train("big", os.path.join(d, "big_*.bin"), "--steps", "3",
                   "--no-progress")
    m = re.search(r"process peak RSS \+([\d.]+) (KiB|MiB|GiB)", p.stdout)
    if not m:
        fail("no RSS in the summary:\n" + p.stdout)
    grew = float(m.group(1)) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[m.group(2)]
    if grew > 24:
        fail(f"training on a 256 MiB corpus grew the RSS by {grew:.1f} MiB")
    print(f"big corpus: 256 MiB of shards, process peak RSS +{grew:.1f} MiB")


def eval_tokens(g, text):
    u8 = os.path.join(g.work, "text_u8.bin")
    # --no-shuffle: step s + 1 trains on windows s*B .. s*B + B - 1, which is
    # what the eval file holds, so evaluating after step s must give the loss
    # of step s + 1.
    s = 6
    held = os.path.join(g.work, "held.bin")
    text[s * BATCH * T:(s + 1) * BATCH * T + 1].tofile(held)
    _, ref = g.train("next", u8, "--steps", str(s + 1), "--no-shuffle",
                     "--no-progress")
    p, m = g.train("eval", u8, "--steps", str(s), "--no-shuffle",
                   "--eval-every", "3", "--eval-tokens", held)
    rows = [json.loads(l) for l in open(m)]
    evaluated = [r["step"] for r in rows if "eval_loss" in r]
    if evaluated != [3, 6]:
        fail(f"--eval-every 3 over 6 steps should evaluate at 3 and 6: {evaluated}")
    last = rows[-1]
    if abs(last["eval_ppl"] - math.exp(last["eval_loss"])) > 1e-6 * last["eval_ppl"]:
        fail(f"eval_ppl {last['eval_ppl']} is not exp(eval_loss)")
    want = losses(ref)[s]
    if abs(last["eval_loss"] - want) > 2e-4 * abs(want):
        fail(f"eval loss after step {s} is {last['eval_loss']}, step {s + 1} "
             f"trained on the same windows with loss {want}")
    if "eval loss" not in p.stderr or "ppl" not in p.stderr:
        fail("the progress line should show the evaluation:\n" + p.stderr)
    if f"eval: {BATCH} windows, loss {last['eval_loss']:.4f}" not in p.stdout:
        fail("the end of the run should report the last evaluation:\n" + p.stdout)
    # tcc-run takes the same flags and evaluates alike.
    m2 = os.path.join(g.work, "eval_run.jsonl")
    run([g.tcc_run, "train", g.art, "--tokens", u8, "--steps", str(s),
         "--no-shuffle", "--eval-every", "3", "--eval-tokens", held,
         "--metrics", m2, "--no-progress"])
    rows2 = [json.loads(l) for l in open(m2)]
    if [r.get("eval_loss") for r in rows2] != [r.get("eval_loss") for r in rows]:
        fail("tcc-run's evaluations differ from tcc's")
    print(f"eval tokens: after step {s} loss {last['eval_loss']:.5f} = step "
          f"{s + 1}'s {want:.5f}, ppl {last['eval_ppl']:.3f}")


def eval_data(args, work):
    ex = args.examples
    art = os.path.join(work, "mlp.tcc")
    run([args.tcc, "compile", os.path.join(ex, "mlp.onnx"), "-o", art,
         "--batch", "32", "--optimizer", "adamw", "--lr", "0.003"])
    metrics = os.path.join(work, "mlp.jsonl")
    p = run([args.tcc, "train", art, "--steps", "20", "--no-progress",
             "--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
             "--data", "labels=" + os.path.join(ex, "digits", "train_y.npy"),
             "--eval-data", "x=" + os.path.join(ex, "digits", "test_x.npy"),
             "--eval-data", "labels=" + os.path.join(ex, "digits", "test_y.npy"),
             "--eval-every", "10", "--eval-batches", "3", "--metrics", metrics])
    rows = [json.loads(l) for l in open(metrics)]
    ev = [r for r in rows if "eval_loss" in r]
    if [r["step"] for r in ev] != [10, 20] or not all("eval_accuracy" in r for r in ev):
        fail(f"--eval-every 10 with --eval-data: eval lines {ev}")
    if not 0.3 < ev[-1]["eval_accuracy"] <= 1:
        fail(f"accuracy after 20 steps is {ev[-1]['eval_accuracy']}")
    acc = f"accuracy {ev[-1]['eval_accuracy'] * 100:.2f}%"
    if acc not in p.stdout:
        fail(f"the end of the run should report {acc}:\n{p.stdout}")
    print(f"eval data: step 20 {acc}, loss {ev[-1]['eval_loss']:.4f}")

    # An MSE model reports its loss, no accuracy. --no-shuffle: step s + 1
    # trains on samples s*32 .. s*32 + 31; evaluated after step s they give
    # the loss that step computes.
    mse = os.path.join(work, "mlp_mse.tcc")
    run([args.tcc, "compile", os.path.join(ex, "mlp.onnx"), "-o", mse,
         "--batch", "32", "--loss", "mse", "--optimizer", "sgd", "--lr", "0.1"])
    x = np.load(os.path.join(ex, "digits", "train_x.npy"))
    y = np.eye(10, dtype=np.float32)[np.load(os.path.join(ex, "digits", "train_y.npy"))]
    np.save(os.path.join(work, "onehot.npy"), y)
    s = 4
    np.save(os.path.join(work, "held_x.npy"), x[s * 32:(s + 1) * 32])
    np.save(os.path.join(work, "held_y.npy"), y[s * 32:(s + 1) * 32])
    common = ["--no-shuffle", "--no-progress",
              "--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
              "--data", "labels=" + os.path.join(work, "onehot.npy")]
    ref = os.path.join(work, "mse_ref.jsonl")
    run([args.tcc, "train", mse, "--steps", str(s + 1), "--metrics", ref, *common])
    out = os.path.join(work, "mse.jsonl")
    p = run([args.tcc, "train", mse, "--steps", str(s), "--metrics", out,
             "--eval-every", str(s), *common,
             "--eval-data", "x=" + os.path.join(work, "held_x.npy"),
             "--eval-data", "labels=" + os.path.join(work, "held_y.npy")])
    last = [json.loads(l) for l in open(out)][-1]
    want = losses(ref)[s]
    if "eval_accuracy" in last or abs(last["eval_loss"] - want) > 1e-5 * want:
        fail(f"mse: eval after step {s} is {last}, step {s + 1}'s loss {want}")
    if "loss " + f"{last['eval_loss']:.4f} (mse)" not in p.stdout:
        fail("mse: the end of the run should report the loss:\n" + p.stdout)
    print(f"eval mse: after step {s} loss {last['eval_loss']:.6f} = step "
          f"{s + 1}'s {want:.6f}")
    return art


def errors(args, g, mlp, text, shards):
    w = g.work
    ex = args.examples
    u8 = os.path.join(w, "text_u8.bin")
    bad = os.path.join(w, "bad")
    os.makedirs(bad, exist_ok=True)
    llmc_shard(os.path.join(bad, "v2.bin"), text[:1000], version=2)
    llmc_shard(os.path.join(bad, "long.bin"), text[:1000], count=5000)
    llmc_shard(os.path.join(bad, "u16.bin"), text[:1000])
    damaged = os.path.join(w, "damaged")
    os.makedirs(damaged, exist_ok=True)
    for i in range(2):
        llmc_shard(os.path.join(damaged, f"s{i}.bin"), text[:1000])
    with open(os.path.join(damaged, "s1.bin"), "r+b") as f:
        f.write(struct.pack("<i", 12345))
    vocab = os.path.join(w, "vocab.bin")
    toks = text[:1000].astype(np.uint16)
    toks[700] = 300
    llmc_shard(vocab, toks)
    short_x = os.path.join(w, "short_x.npy")
    np.save(short_x, np.zeros((8, 16), dtype=np.int64))
    steps = ["--steps", "2"]
    cases = [
        ([u8, "--eval-every", "1"],
         "--eval-every needs held-out data: --eval-data NAME=FILE ... or "
         "--eval-tokens FILE"),
        ([u8, "--eval-every", "1", "--eval-data", "x=" + short_x,
          "--eval-data", "labels=" + short_x],
         f"samples have shape [16], the model expects [{T}]"),
        ([os.path.join(w, "nothing_*.bin")],
         "nothing_*.bin: the pattern matches no file"),
        ([u8, "--eval-every", "1", "--eval-tokens", os.path.join(w, "none_*.bin")],
         "none_*.bin: the pattern matches no file"),
        ([os.path.join(bad, "v2.bin")],
         "v2.bin: bad llm.c shard header: magic 20240520 with version 2, "
         "expected version 1"),
        ([os.path.join(bad, "long.bin")],
         "long.bin: bad llm.c shard header: it declares 5000 u16 tokens"),
        ([damaged], "s1.bin: no llm.c shard header (its first int32 is 12345"),
        ([os.path.join(bad, "u16.bin"), "--token-type", "u32"],
         "u16.bin: --token-type u32 contradicts the llm.c header, whose "
         "tokens are u16"),
        ([vocab, "--no-shuffle", "--steps", "8"],
         "vocab.bin: token 300 at token 700 (byte offset 2424) is outside the "
         "model's vocabulary of 256"),
    ]
    for extra, want in cases:
        length = [] if "--steps" in extra else steps
        p = run([g.tcc, "train", g.art, "--tokens", *extra, *length,
                 "--no-progress"], expect_rc=1)
        if want not in p.stderr:
            fail(f"{' '.join(extra)}: expected '{want}' in:\n{p.stderr}")
    # tcc-run says the same.
    p = run([args.tcc_run, "train", g.art, "--tokens", os.path.join(bad, "v2.bin"),
             *steps, "--no-progress"], expect_rc=1)
    if "bad llm.c shard header" not in p.stderr:
        fail("tcc-run: " + p.stderr)
    p = run([args.tcc, "train", mlp, "--steps", "2", "--no-progress",
             "--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
             "--data", "labels=" + os.path.join(ex, "digits", "train_y.npy"),
             "--eval-every", "1", "--eval-tokens", u8], expect_rc=1)
    if "--eval-tokens needs a model with one int64 input [N, T]" not in p.stderr:
        fail("--eval-tokens on the MLP: " + p.stderr)
    print(f"errors: {len(cases) + 2} cases rejected with their message")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--tcc-run", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)  # checkpoints of a last run
    os.makedirs(args.work)
    text = np.fromfile(os.path.join(args.examples, "text", "licenses.txt"),
                       dtype=np.uint8)
    g = Gpt(args, args.work)
    shards, windows = formats(g, text)
    resume(g, shards, windows, len(text))
    big_corpus(g)
    eval_tokens(g, text)
    mlp = eval_data(args, args.work)
    errors(args, g, mlp, text, shards)
    print("token data: all checks passed")


if __name__ == "__main__":
    main()
