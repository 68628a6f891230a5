# pip install torch
"""The cases of benches/transformer.rs in PyTorch (eager and torch.compile, CPU).

- Causal attention: batch 1, 8 heads (`--heads`), head dim 64, f32,
  `scaled_dot_product_attention(q, k, v, is_causal=True)` (PyTorch's fused SDPA), forward
  and the gradient of its sum with respect to q, k, v.
- The GPT training step of examples/gpt (nanoGPT's model and recipe: pre-norm blocks, no
  biases, tied embedding, exact-erf GELU, AdamW with warm-up and cosine decay, clipping at
  global norm 1), at nanoGPT's CPU size and at its GPU default, in f32 and under CPU
  autocast to bf16 (`torch.autocast("cpu", torch.bfloat16)`: products in bf16 on oneDNN,
  the loss in f32), each eager and with the model under `torch.compile`.

Run: python3 benches/torch_transformer.py --seqs 1024,4096 --gpt cpu,gpu [--reps 5]
(`cargo bench --bench transformer` runs it itself when PyTorch is installed.)
Prints one tab-separated line per case: name, size (seq, or the GPT size), median ms,
temp bytes (`nan`: PyTorch has no such report), compile ms (the first call's time).
"""

import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def timed(f, reps):
    t = time.perf_counter()
    f()
    first_ms = (time.perf_counter() - t) * 1e3
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples), first_ms


def attention_cases(s, heads, reps):
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.rand(1, heads, s, 64, generator=g) for _ in range(3))
    fwd = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def grad(f):
        def run():
            qs, ks, vs = (t.detach().requires_grad_() for t in (q, k, v))
            f(qs, ks, vs).sum().backward()
            return qs.grad
        return run

    with torch.no_grad():
        for name, f in [("sdpa fwd eager", fwd), ("sdpa fwd compiled", torch.compile(fwd))]:
            ms, first = timed(lambda: f(q, k, v), reps)
            yield f"{name}\t{s}\t{ms:.3f}\tnan\t{first:.1f}"
    for name, f in [("sdpa grad eager", fwd), ("sdpa grad compiled", torch.compile(fwd))]:
        ms, first = timed(grad(f), reps)
        yield f"{name}\t{s}\t{ms:.3f}\tnan\t{first:.1f}"


GPT_SIZES = {
    # vocab, block, width, heads, layers, batch
    "cpu": (65, 64, 128, 4, 4, 12),
    "gpu": (65, 256, 384, 6, 6, 64),
}


class Block(nn.Module):
    def __init__(self, w, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(w, bias=False)
        self.wqkv = nn.Linear(w, 3 * w, bias=False)
        self.wo = nn.Linear(w, w, bias=False)
        self.ln2 = nn.LayerNorm(w, bias=False)
        self.fc = nn.Linear(w, 4 * w, bias=False)
        self.proj = nn.Linear(4 * w, w, bias=False)

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = self.wqkv(self.ln1(x)).split(w, dim=2)
        q, k, v = (z.view(b, t, self.heads, w // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(y.transpose(1, 2).contiguous().view(b, t, w))
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, size):
        super().__init__()
        vocab, block, w, heads, layers, _ = GPT_SIZES[size]
        self.wte = nn.Embedding(vocab, w)
        self.wpe = nn.Embedding(block, w)
        self.blocks = nn.ModuleList(Block(w, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(w, bias=False)
        for name, p in self.named_parameters():
            if p.ndim >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("wo.weight", "proj.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.wte.weight.t()


def gpt_case(size, compiled, bf16, reps, total_steps=2000):
    vocab, block, _, _, _, batch = GPT_SIZES[size]
    torch.manual_seed(1337)
    model = Gpt(size)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99), eps=1e-8)

    def lr(it):
        if it < 100:
            return (it + 1) / 100
        ratio = min(1.0, (it - 100) / max(1, total_steps - 100))
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * ratio))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr)
    forward = torch.compile(model) if compiled else model
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, vocab, (batch, block), generator=g)
    tg = torch.randint(0, vocab, (batch, block), generator=g)

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = forward(ids)
        loss = F.cross_entropy(logits.float().view(-1, vocab), tg.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return loss.item()

    ms, first = timed(step, reps)
    name = f"gpt step {'compiled' if compiled else 'eager'}{' bf16' if bf16 else ''}"
    return f"{name}\t{size}\t{ms:.3f}\tnan\t{first:.1f}"


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--seqs", default="1024,4096")
    a.add_argument("--gpt", default="cpu,gpu")
    a.add_argument("--reps", type=int, default=5)
    a.add_argument("--heads", type=int, default=8)
    a = a.parse_args()
    for size in [s for s in a.gpt.split(",") if s]:
        for compiled in (False, True):
            for bf16 in (False, True):
                reps = a.reps if size == "cpu" else min(a.reps, 3)
                try:
                    print(gpt_case(size, compiled, bf16, max(reps, 20) if size == "cpu" else reps), flush=True)
                except Exception as e:  # a peer's failure is a note, not the bench's
                    name = f"gpt step {'compiled' if compiled else 'eager'}{' bf16' if bf16 else ''}"
                    print(f"{name}\t{size}\tnan\tnan\tnan\t# {type(e).__name__}: {e}", flush=True)
    for s in [int(x) for x in a.seqs.split(",") if x]:
        try:
            for line in attention_cases(s, a.heads, a.reps):
                print(line, flush=True)
        except Exception as e:
            print(f"sdpa\t{s}\tnan\tnan\tnan\t# {type(e).__name__}", flush=True)


if __name__ == "__main__":
    main()
