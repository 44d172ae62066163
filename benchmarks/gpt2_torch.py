"""gpt2_small.py's PyTorch side: the worker that times one PyTorch setup in
its own process, and the "PyTorch best practice" model.

The best-practice rows run GPT-2 small as nanoGPT writes it for speed: one
fused QKV Linear per layer, F.scaled_dot_product_attention(is_causal=True)
(flash attention on a GPU), GELU's tanh approximation, the LM head tied to
the token embedding, the vocabulary padded to a multiple of 64 (50257 ->
50304) so the head's GEMM tiles evenly, AdamW(fused=True), bf16 autocast,
eager or torch.compile (default and max-autotune). Its loss over the
padded vocabulary is nanoGPT's too (the 47 pad logits take part in the
softmax, never as a label).
"""
import json
import math
import statistics
import time

MODES = ["eager", "compile", "nanogpt-eager", "nanogpt-compile",
         "nanogpt-max-autotune"]


def padded_vocab(vocab, multiple=64):
    return (vocab + multiple - 1) // multiple * multiple


def nanogpt_model(cfg):
    """GPT-2 as nanoGPT's model.py writes it (biases on, no dropout),
    with its initialisation: normal(0, 0.02), residual projections scaled
    by 1/sqrt(2 * layers)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    d, heads, layers, t = cfg["d"], cfg["heads"], cfg["layers"], cfg["t"]
    vocab = padded_vocab(cfg["vocab"])

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = self.c_attn(x).split(d, dim=2)
            q, k, v = (z.view(b, n, heads, d // heads).transpose(1, 2)
                       for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, n, d))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(d)
            self.c_fc = nn.Linear(d, 4 * d)
            self.gelu = nn.GELU(approximate="tanh")
            self.c_proj = nn.Linear(4 * d, d)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(t, d)
            self.h = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(d)
            self.lm_head = nn.Linear(d, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # tied, as GPT-2
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
                elif p.dim() == 2:
                    nn.init.normal_(p, 0.0, 0.02)
                elif name.endswith(".bias"):
                    nn.init.zeros_(p)

        def forward(self, idx):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return GPT()


def torch_worker(args, cfg, build_model):
    """One PyTorch measurement in this process; prints one JSON line.
    `build_model(cfg)` is the model the tcc rows train (CharGPT)."""
    import torch
    dev = torch.device(args.device)
    torch.manual_seed(0)
    nanogpt = args.mode.startswith("nanogpt")
    model = (nanogpt_model(cfg) if nanogpt else build_model(cfg)).to(dev)
    model.train()
    cuda = dev.type == "cuda"
    # PyTorch's fastest AdamW on a GPU: one fused kernel for all parameters
    # (the default, foreach, launches several per group of tensors); tcc's
    # multi-tensor AdamW is the same idea. The CPU keeps the default, except
    # in the best-practice rows (fused AdamW has a CPU kernel since 2.4).
    fused = cuda or nanogpt
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01,
                            **({"fused": True} if fused else {}))
    step_fn = model
    if args.mode in ("compile", "nanogpt-compile"):
        step_fn = torch.compile(model)
    elif args.mode == "nanogpt-max-autotune":
        step_fn = torch.compile(model, mode="max-autotune")
    lossf = torch.nn.CrossEntropyLoss()
    x = torch.randint(0, cfg["vocab"], (args.batch, cfg["t"]), device=dev)
    y = torch.randint(0, cfg["vocab"], (args.batch, cfg["t"]), device=dev)
    amp_dtype = torch.bfloat16 if args.precision == "bf16" else None

    def step():
        opt.zero_grad(set_to_none=True)
        if amp_dtype is not None:
            with torch.autocast(dev.type, dtype=amp_dtype):
                out = step_fn(x)
                loss = lossf(out.float().view(-1, out.shape[-1]), y.view(-1))
        else:
            out = step_fn(x)
            loss = lossf(out.view(-1, out.shape[-1]), y.view(-1))
        loss.backward()
        opt.step()
        return loss

    r = time_steps(step, args.warmup, args.steps, cuda)
    r["adamw"] = "fused" if fused else "default"
    print(json.dumps(r))


def time_steps(step, warmup, steps, cuda):
    """A PyTorch worker's figures: `step` run `warmup` times, then timed
    `steps` times (synchronized on a GPU); the median step, the last loss,
    the GPU's peak memory over the timed steps, PyTorch and the device."""
    import torch
    for _ in range(warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return {"step_s": statistics.median(times), "loss": float(loss),
            "peak_bytes": torch.cuda.max_memory_allocated() if cuda else 0,
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name() if cuda else "cpu"}
