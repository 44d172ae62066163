#!/usr/bin/python3
"""A model, on paper, of data-parallel GPT-2-small steps on 8 and 64 H100s.

No multi-GPU machine has been lent to this project, so this is arithmetic,
not a measurement: the measured single-H100 step of tcc's compiled GPT-2
small, the gradient buckets the compiler will issue, and NCCL's published
all-reduce bus bandwidths. docs/scaling.md explains the model, its inputs
and their sources, and what a lent machine should measure to check it.

  /usr/bin/python3 benchmarks/scaling_model.py            # the tables
  /usr/bin/python3 benchmarks/scaling_model.py --json     # one JSON object

The model (stdlib only):
* One step = forward, backward, then the optimizer. Gradients are float32
  and are averaged in place by one ring all-reduce per bucket.
* Buckets are filled in backward order, DDP's way: parameters are appended
  as their gradients are produced and a bucket closes once it holds at
  least --bucket-mb MiB (a tensor larger than that is a bucket of its own).
* A bucket's all-reduce takes alpha + 2(N-1)/N * bytes / busbw. It starts
  when its last gradient is ready and the previous bucket's all-reduce has
  finished (one communicator: NCCL runs them in order), so it overlaps
  with the rest of the backward; what is left when the backward ends is
  exposed, and the optimizer waits for it.
* Not modelled: stragglers, data loading, NCCL's own choice of algorithm
  and protocol per size (tree, NVLS, LL128), SHARP; the SMs and memory
  bandwidth NCCL's kernels take from the overlapped backward only as a
  bound (--contention).
"""
import argparse
import json
import sys

MIB = 1 << 20

# Measured, benchmarks/results/gpt2_small_h100_2026-11-27b.md: the "tcc"
# row of the GPT-2 table (batch 64, T 1024, bf16, AdamW; median of three
# rounds, CUDA graphs) on an H100 80GB HBM3.
MEASURED_STEP_MS = 123.2
MEASURED_BATCH = 64
SEQ = 1024

# The same file's per-kernel profile ("Slowest kernels", 122.56 ms a step,
# each kernel between its own events), sorted into phases by kernel name
# (docs/scaling.md shows the sums). Used for its proportions only: the
# model scales them to the step above.
PROFILE_MS = {
    # matmul_epilogue:bias 18.937, :bias_gelu_tanh_aux 7.791, attention
    # 5.320, fused add+cast+layer_norm 3.725, gather 0.305; plus copy 0.209
    # and the 0.081 not listed, whose place in the step is unknown.
    "forward": 36.368,
    # fused softmax cross-entropy and its gradient (one kernel)
    "loss": 5.533,
    # the head's dX (matmul k50304, 6.739) and dW (bgrad_lhs, 6.975)
    "head_bwd": 13.714,
    # the 12 layers' gradients: matmul 34.813 - 6.739, attention_grad
    # 19.935, dgelu_tanh_bgrad 9.896, the layer norms' gradients 6.926
    "layers_bwd": 64.831,
    # gather_grad 0.344 (token embedding), slice_grad 0.102 (positions)
    "embed_bwd": 0.446,
    # adamw_update (multi-tensor)
    "optimizer": 1.668,
}

# Published bus bandwidths and NCCL's latency model (sources: docs/scaling.md).
NVLINK_RING_BUSBW = 370.0  # GB/s, 8 H100s, NVLink4/NVSwitch, ring
NDR_NIC_BUSBW = 46.0  # GB/s per 400 Gb/s NDR NIC (46-48 published)
NICS_PER_NODE = 8
GPUS_PER_NODE = 8
# NCCL's tuning model (src/graph/tuning.cc), ring all-reduce, Simple
# protocol: a base latency plus one per step, NVLink or network.
NCCL_RING_BASE_US = 8.4
NCCL_RING_NVLINK_STEP_US = 3.4
NCCL_RING_NET_STEP_US = 14.0


def gpt2_tensors(vocab=50257, d=768, layers=12, ctx=1024):
    """GPT-2-small's parameters as examples/make_gpt.py's CharGPT holds them
    (untied head with a bias, PyTorch's encoder layer), in the order their
    gradients are produced, each with its phase and its position in it."""
    out = [("head.weight", vocab * d, "head_bwd", 1.0),
           ("head.bias", vocab, "head_bwd", 1.0),
           ("norm", 2 * d, "head_bwd", 1.0)]
    # Within a layer, backward order; a tensor is ready after the share of
    # the layer's time that its and the earlier tensors' sizes make up.
    layer = [("fc2.weight", 4 * d * d), ("fc2.bias", d),
             ("fc1.weight", 4 * d * d), ("fc1.bias", 4 * d),
             ("ln2", 2 * d), ("out_proj.weight", d * d), ("out_proj.bias", d),
             ("in_proj.weight", 3 * d * d), ("in_proj.bias", 3 * d),
             ("ln1", 2 * d)]
    per_layer = sum(n for _, n in layer)
    for i in reversed(range(layers)):
        done = 0
        for name, n in layer:
            done += n
            frac = (layers - 1 - i + done / per_layer) / layers
            out.append((f"layer{i}.{name}", n, "layers_bwd", frac))
    out.append(("pos", ctx * d, "embed_bwd", 1.0))
    out.append(("tok.weight", vocab * d, "embed_bwd", 1.0))
    return out


def uniform_tensors(params, pieces=1000):
    """A model whose gradients appear evenly over one backward phase."""
    out = []
    for k in range(pieces):
        n = params * (k + 1) // pieces - params * k // pieces
        out.append((f"p{k}", n, "backward", (k + 1) / pieces))
    return out


def make_buckets(tensors, cap_bytes, elem_bytes=4):
    """Greedy buckets in backward order: [(bytes, last tensor index)]."""
    buckets, size = [], 0
    for i, (_, n, _, _) in enumerate(tensors):
        size += n * elem_bytes
        if size >= cap_bytes:
            buckets.append((size, i))
            size = 0
    if size:
        buckets.append((size, len(tensors) - 1))
    return buckets


def nccl_ring_alpha_us(n, gpus_per_node=GPUS_PER_NODE):
    """NCCL's modelled latency of one ring all-reduce over n ranks."""
    if n <= 1:
        return 0.0
    nodes = -(-n // gpus_per_node)
    steps = 2 * (n - 1)
    inter = 2 * nodes if nodes > 1 else 0
    return (NCCL_RING_BASE_US + (steps - inter) * NCCL_RING_NVLINK_STEP_US +
            inter * NCCL_RING_NET_STEP_US)


def default_busbw(n, gpus_per_node=GPUS_PER_NODE, nics=NICS_PER_NODE,
                  nic_gbs=NDR_NIC_BUSBW, nvlink_gbs=NVLINK_RING_BUSBW):
    """Within a node, NVLink's; across nodes a ring's traffic leaves each
    node through all its NICs, so the bus bandwidth is their sum."""
    if n <= gpus_per_node:
        return nvlink_gbs
    return min(nvlink_gbs, nics * nic_gbs)


def allreduce_ms(nbytes, n, busbw_gbs, alpha_us):
    """Ring all-reduce of nbytes over n ranks, in ms."""
    if n <= 1:
        return 0.0
    bus_bytes = 2.0 * (n - 1) / n * nbytes
    return alpha_us * 1e-3 + bus_bytes / (busbw_gbs * 1e9) * 1e3


def simulate(phases, tensors, n, bucket_mb, busbw_gbs, alpha_us,
             elem_bytes=4, contention=0.0):
    """One step's timeline. phases: ordered {name: ms}, "optimizer" last;
    every phase between the first gradient's and "optimizer" is backward.
    contention: the fraction of the hidden all-reduce time added to the
    step for NCCL's kernels slowing the backward they overlap (a bound,
    not a timeline: the later readiness it causes is not propagated).
    Returns the step, the exposed communication and the buckets."""
    start, t = {}, 0.0
    for name, ms in phases.items():
        start[name] = t
        t += ms
    bwd_end = start["optimizer"]
    ready = [start[ph] + phases[ph] * frac for _, _, ph, frac in tensors]
    buckets = make_buckets(tensors, bucket_mb * MIB, elem_bytes)
    end, comm, rows = 0.0, 0.0, []
    for nbytes, last in buckets:
        dur = allreduce_ms(nbytes, n, busbw_gbs, alpha_us)
        begin = max(ready[last], end)
        end = begin + dur
        comm += dur
        rows.append(dict(bytes=nbytes, last=last, ready_ms=ready[last],
                         start_ms=begin, end_ms=end))
    exposed = max(0.0, end - bwd_end) if n > 1 else 0.0
    step = (bwd_end + exposed + phases["optimizer"] +
            contention * (comm - exposed))
    return dict(step_ms=step, exposed_ms=exposed, comm_ms=comm,
                backward_end_ms=bwd_end, buckets=rows)


def scaled_phases(step_ms, per_gpu_batch, layout):
    """The profile's phases scaled to the measured step, then linearly to
    the per-GPU batch (all but the optimizer, whose work is per parameter)."""
    scale = step_ms / sum(PROFILE_MS.values())
    p = {k: v * scale for k, v in PROFILE_MS.items()}
    b = per_gpu_batch / MEASURED_BATCH
    for k in p:
        if k != "optimizer":
            p[k] *= b
    if layout == "uniform":
        return {"forward": p["forward"],
                "backward": p["loss"] + p["head_bwd"] + p["layers_bwd"] +
                p["embed_bwd"],
                "optimizer": p["optimizer"]}
    return p


def evaluate(args, n, bucket_mb=None, busbw_scale=1.0, alpha_scale=1.0,
             per_gpu_batch=None, contention=None):
    bucket_mb = args.bucket_mb if bucket_mb is None else bucket_mb
    b = args.batch if per_gpu_batch is None else per_gpu_batch
    phases = scaled_phases(args.step_ms, b, args.layout)
    tensors = (gpt2_tensors() if args.layout == "gpt2" else
               uniform_tensors(args.params))
    busbw = (args.busbw if args.busbw else default_busbw(n)) * busbw_scale
    alpha = (args.alpha_us if args.alpha_us is not None else
             nccl_ring_alpha_us(n)) * alpha_scale
    contention = args.contention if contention is None else contention
    r = simulate(phases, tensors, n, bucket_mb, busbw, alpha,
                 contention=contention)
    r.update(n=n, per_gpu_batch=b, bucket_mb=bucket_mb, busbw_gbs=busbw,
             alpha_us=alpha if n > 1 else 0.0,
             nbuckets=len(r["buckets"]),
             tokens_per_s=n * b * SEQ / (r["step_ms"] * 1e-3))
    return r


def weak_efficiency(args, r):
    one = evaluate(args, 1, per_gpu_batch=r["per_gpu_batch"])
    return one["step_ms"] / r["step_ms"]


def busbw_for_efficiency(args, n, target, busbw_cap=2000.0):
    """The lowest bus bandwidth (GB/s) at which n GPUs keep the target
    weak-scaling efficiency, by bisection; None if even busbw_cap misses."""
    one = evaluate(args, 1)["step_ms"]

    def eff(bw):
        a = argparse.Namespace(**vars(args))
        a.busbw = bw
        return one / evaluate(a, n)["step_ms"]

    if eff(busbw_cap) < target:
        return None
    lo, hi = 0.01, busbw_cap
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if eff(mid) >= target else (mid, hi)
    return hi


def print_timeline(args, n):
    r = evaluate(args, n)
    names = [t[0] for t in (gpt2_tensors() if args.layout == "gpt2" else
                            uniform_tensors(args.params))]
    bwd0 = scaled_phases(args.step_ms, args.batch, args.layout)["forward"]
    print(f"Buckets on {n} GPUs, ms from the start of the backward "
          f"(which ends at {r['backward_end_ms'] - bwd0:.2f}):\n")
    print(fmt_row(["bucket", "MiB", "last gradient", "ready", "start", "end"]))
    print(fmt_row(["---"] * 6))
    for k, b in enumerate(r["buckets"]):
        nbytes, last = b["bytes"], b["last"]
        print(fmt_row([str(k), f"{nbytes / MIB:.1f}", names[last],
                       f"{b['ready_ms'] - bwd0:.2f}",
                       f"{b['start_ms'] - bwd0:.2f}",
                       f"{b['end_ms'] - bwd0:.2f}"]))
    return 0


def fmt_row(cells):
    return "| " + " | ".join(cells) + " |"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--step-ms", type=float, default=MEASURED_STEP_MS,
                    help="measured single-GPU step at the measured batch")
    ap.add_argument("--batch", type=int, default=MEASURED_BATCH,
                    help="per-GPU batch (weak scaling: fixed)")
    ap.add_argument("--layout", choices=["gpt2", "uniform"], default="gpt2",
                    help="gpt2: GPT-2 small's tensors in backward order; "
                    "uniform: --params gradients ready evenly over backward")
    ap.add_argument("--params", type=int, default=163087441,
                    help="parameters of the uniform layout")
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("--busbw", type=float, default=None,
                    help="all-reduce bus bandwidth, GB/s (default: 370 "
                    "within a node, 8 x 46 across nodes)")
    ap.add_argument("--alpha-us", type=float, default=None,
                    help="latency of one all-reduce (default: NCCL's ring "
                    "model for N)")
    ap.add_argument("--contention", type=float, default=0.0,
                    help="fraction of the hidden all-reduce time that the "
                    "overlapped backward loses to NCCL's kernels (assumed)")
    ap.add_argument("--gpus", default="1,8,64")
    ap.add_argument("--global-batch", type=int, default=512,
                    help="strong scaling's fixed global batch")
    ap.add_argument("--timeline", type=int, metavar="N",
                    help="print the buckets' schedule on N GPUs instead")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    gpus = [int(g) for g in args.gpus.split(",")]
    if args.timeline:
        return print_timeline(args, args.timeline)

    main_rows = []
    for n in gpus:
        r = evaluate(args, n)
        r["efficiency"] = weak_efficiency(args, r)
        main_rows.append(r)

    sens = []
    for n in [g for g in gpus if g > 1]:
        for mb in (1, 5, 25, 100):
            sens.append((n, f"bucket {mb:g} MiB", evaluate(args, n, mb)))
        sens.append((n, "busbw / 2", evaluate(args, n, busbw_scale=0.5)))
        sens.append((n, "alpha x 2", evaluate(args, n, alpha_scale=2.0)))
        sens.append((n, "busbw / 2, bucket 1 MiB",
                     evaluate(args, n, 1, busbw_scale=0.5)))
        sens.append((n, "overlap costs 25% of hidden all-reduce time",
                     evaluate(args, n, contention=0.25)))
    for n, _, r in sens:
        r["efficiency"] = weak_efficiency(args, r)
    strong = []
    for n in gpus:
        b = args.global_batch / n
        r = evaluate(args, n, per_gpu_batch=b)
        strong.append(r)
    base = strong[0]["step_ms"] * gpus[0] if gpus else 1.0
    for r in strong:
        r["efficiency"] = base / (r["n"] * r["step_ms"])
    need = {n: busbw_for_efficiency(args, n, 0.9)
            for n in gpus if n > 1}

    if args.json:
        def strip(r):
            return {k: v for k, v in r.items() if k != "buckets"}
        json.dump(dict(weak=[strip(r) for r in main_rows],
                       sensitivity=[dict(strip(r), case=c)
                                    for _, c, r in sens],
                       strong=[strip(r) for r in strong],
                       busbw_for_90=need), sys.stdout, indent=1)
        print()
        return 0

    print(f"Modelled, not measured. Single-GPU step {args.step_ms} ms at "
          f"batch {MEASURED_BATCH} (measured), layout {args.layout}, "
          f"float32 gradients, buckets of {args.bucket_mb:g} MiB.\n")
    print("Weak scaling (per-GPU batch fixed):\n")
    print(fmt_row(["GPUs", "batch/GPU", "buckets", "alpha us", "busbw GB/s",
                   "all-reduce ms", "exposed ms", "step ms", "tokens/s",
                   "efficiency"]))
    print(fmt_row(["---"] * 10))
    for r in main_rows:
        print(fmt_row([str(r["n"]), f"{r['per_gpu_batch']:g}",
                       str(r["nbuckets"]),
                       f"{r['alpha_us']:.1f}" if r["n"] > 1 else "-",
                       f"{r['busbw_gbs']:.0f}" if r["n"] > 1 else "-",
                       f"{r['comm_ms']:.2f}",
                       f"{r['exposed_ms']:.2f}", f"{r['step_ms']:.2f}",
                       f"{r['tokens_per_s']:,.0f}",
                       f"{100 * r['efficiency']:.1f}%"]))
    print("\nSensitivity (weak scaling):\n")
    print(fmt_row(["GPUs", "case", "buckets", "all-reduce ms", "exposed ms",
                   "step ms", "efficiency"]))
    print(fmt_row(["---"] * 7))
    for n, case, r in sens:
        print(fmt_row([str(n), case, str(r["nbuckets"]), f"{r['comm_ms']:.2f}",
                       f"{r['exposed_ms']:.2f}", f"{r['step_ms']:.2f}",
                       f"{100 * r['efficiency']:.1f}%"]))
    print(f"\nStrong scaling (global batch {args.global_batch} fixed; "
          "compute linear in the per-GPU batch):\n")
    print(fmt_row(["GPUs", "batch/GPU", "exposed ms", "step ms", "tokens/s",
                   "efficiency"]))
    print(fmt_row(["---"] * 6))
    for r in strong:
        print(fmt_row([str(r["n"]), f"{r['per_gpu_batch']:g}",
                       f"{r['exposed_ms']:.2f}", f"{r['step_ms']:.2f}",
                       f"{r['tokens_per_s']:,.0f}",
                       f"{100 * r['efficiency']:.1f}%"]))
    print()
    for n, bw in need.items():
        alpha = (nccl_ring_alpha_us(n) if args.alpha_us is None else
                 args.alpha_us)
        print(f"{n} GPUs keep 90% weak-scaling efficiency down to a bus "
              f"bandwidth of " + (f"{bw:.1f} GB/s" if bw else "(never)") +
              f" (alpha {alpha:.1f} us).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
