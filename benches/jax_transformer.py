# pip install "jax[cpu]" optax numpy
"""The cases of benches/transformer.rs in JAX (jax.jit, XLA:CPU).

- Causal attention: batch 1, 8 heads (`--heads`), head dim 64, f32,
  `softmax(where(tril, q @ k^T / sqrt(64), -inf)) @ v`, forward and the gradient of its
  sum with respect to q, k, v.
- The GPT training step of examples/gpt (nanoGPT's model and recipe: pre-norm blocks, no
  biases, tied embedding, exact-erf GELU, AdamW with warm-up and cosine decay, clipping at
  global norm 1), at nanoGPT's CPU size and at its GPU default, parameters and optimiser
  state donated.

Run: python3 benches/jax_transformer.py --seqs 1024,4096 --gpt cpu,gpu [--reps 5]
(`cargo bench --bench transformer` runs it itself when JAX is installed.)
Prints one tab-separated line per case: name, size (seq, or the GPT size), median ms,
temp bytes (`compiled.memory_analysis().temp_size_in_bytes`), compile ms.

`--train ITERS` instead trains the CPU-size model on data/tinyshakespeare.txt as
`cargo run --release --example gpt -- --iters ITERS` does (same split, batch sampling of
its own, validation loss as the mean over 20 random batches and over the whole split)
and prints the wall time, the median step and the final losses; `--seed K` (1337) seeds
the initialisation and the batches.
"""

import argparse
import math
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np


def attention(q, k, v):
    s = q.shape[-2]
    scores = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((s, s), dtype=bool))
    return jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1) @ v


def grad_of_sum(q, k, v):
    return jax.grad(lambda q, k, v: attention(q, k, v).sum(), argnums=(0, 1, 2))(q, k, v)


def measure(name, f, args, reps):
    t = time.perf_counter()
    compiled = jax.jit(f).lower(*args).compile()
    compile_ms = (time.perf_counter() - t) * 1e3
    temp = compiled.memory_analysis().temp_size_in_bytes
    jax.block_until_ready(compiled(*args))
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        samples.append((time.perf_counter() - t) * 1e3)
    return f"{name}\t{args[0].shape[-2]}\t{statistics.median(samples):.3f}\t{temp}\t{compile_ms:.1f}"


GPT_SIZES = {
    # vocab, block, width, heads, layers, batch
    "cpu": (65, 64, 128, 4, 4, 12),
    "gpu": (65, 256, 384, 6, 6, 64),
}


def gpt_init(size, key):
    vocab, block, width, heads, layers, batch = GPT_SIZES[size]
    keys = jax.random.split(key, 2 + 4 * layers)
    normal = lambda k, shape, std: jax.random.normal(k, shape, jnp.float32) * std
    residual = 0.02 / math.sqrt(2 * layers)
    ones = lambda: jnp.ones((width,), jnp.float32)
    blocks = []
    for l in range(layers):
        k = keys[2 + 4 * l: 6 + 4 * l]
        blocks.append(dict(
            ln1=ones(), wqkv=normal(k[0], (width, 3 * width), 0.02), wo=normal(k[1], (width, width), residual),
            ln2=ones(), fc=normal(k[2], (width, 4 * width), 0.02), proj=normal(k[3], (4 * width, width), residual)))
    return dict(wte=normal(keys[0], (vocab, width), 0.02), wpe=normal(keys[1], (block, width), 0.02),
                blocks=blocks, ln_f=ones())


def layer_norm(x, g):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g


def gpt_loss(p, ids, targets, heads):
    b, t = ids.shape
    w = p["wte"].shape[1]
    x = p["wte"][ids] + p["wpe"][:t]
    for blk in p["blocks"]:
        qkv = layer_norm(x, blk["ln1"]) @ blk["wqkv"]
        q, k, v = (qkv[..., i * w:(i + 1) * w].reshape(b, t, heads, w // heads).transpose(0, 2, 1, 3)
                   for i in range(3))
        y = attention(q, k, v).transpose(0, 2, 1, 3).reshape(b, t, w)
        x = x + y @ blk["wo"]
        h = jax.nn.gelu(layer_norm(x, blk["ln2"]) @ blk["fc"], approximate=False)
        x = x + h @ blk["proj"]
    logits = layer_norm(x, p["ln_f"]) @ p["wte"].T
    import optax
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()


def gpt_optimizer(total_steps):
    import optax
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 100, total_steps, 1e-4)
    decay = lambda params: jax.tree_util.tree_map(lambda x: x.ndim >= 2, params)
    return optax.chain(optax.clip_by_global_norm(1.0),
                       optax.adamw(schedule, b1=0.9, b2=0.99, eps=1e-8, weight_decay=0.1, mask=decay))


def gpt_step_fn(size, total_steps):
    heads = GPT_SIZES[size][3]
    opt = gpt_optimizer(total_steps)

    def step(p, s, ids, targets):
        import optax
        l, g = jax.value_and_grad(gpt_loss)(p, ids, targets, heads)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, l

    return opt, jax.jit(step, donate_argnums=(0, 1))


def measure_gpt(size, reps):
    vocab, block, width, heads, layers, batch = GPT_SIZES[size]
    opt, step = gpt_step_fn(size, 2000)
    p = gpt_init(size, jax.random.PRNGKey(1337))
    s = opt.init(p)
    rng = np.random.default_rng(3)
    ids = jnp.asarray(rng.integers(0, vocab, (batch, block)).astype(np.int32))
    tg = jnp.asarray(rng.integers(0, vocab, (batch, block)).astype(np.int32))
    t = time.perf_counter()
    compiled = step.lower(p, s, ids, tg).compile()
    compile_ms = (time.perf_counter() - t) * 1e3
    temp = compiled.memory_analysis().temp_size_in_bytes
    p, s, l = compiled(p, s, ids, tg)
    jax.block_until_ready(l)
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        p, s, l = compiled(p, s, ids, tg)
        jax.block_until_ready(l)
        samples.append((time.perf_counter() - t) * 1e3)
    return f"gpt step\t{size}\t{statistics.median(samples):.3f}\t{temp}\t{compile_ms:.1f}"


def train(iters, seed=1337):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    text = open(os.path.join(root, "data", "tinyshakespeare.txt"), encoding="utf-8").read()
    alphabet = sorted(set(text))
    codes = np.array([ord(c) for c in alphabet])
    ids = np.searchsorted(codes, np.array([ord(c) for c in text])).astype(np.int32)
    split = len(ids) * 9 // 10
    train_ids, val_ids = ids[:split], ids[split:]
    vocab, block, width, heads, layers, batch = GPT_SIZES["cpu"]
    rng = np.random.default_rng(seed)

    def get_batch(data):
        o = rng.integers(0, len(data) - block - 1, batch)
        x = np.stack([data[i:i + block] for i in o])
        y = np.stack([data[i + 1:i + block + 1] for i in o])
        return jnp.asarray(x), jnp.asarray(y)

    opt, step = gpt_step_fn("cpu", iters)
    loss = jax.jit(lambda p, x, y: gpt_loss(p, x, y, heads))
    p = gpt_init("cpu", jax.random.PRNGKey(seed))
    s = opt.init(p)
    times = []
    wall = time.perf_counter()
    for it in range(iters):
        x, y = get_batch(train_ids)
        t = time.perf_counter()
        p, s, l = step(p, s, x, y)
        l = float(l)
        times.append(time.perf_counter() - t)
        if it % 250 == 0 or it == iters - 1:
            print(f"step {it}: loss {l:.4f}", flush=True)
    wall = time.perf_counter() - wall
    est = lambda data: float(np.mean([float(loss(p, *get_batch(data))) for _ in range(20)]))
    tr, va = est(train_ids), est(val_ids)
    # Every position of the validation split, in consecutive windows filling whole batches
    # (as examples/gpt's whole-split loss).
    windows = (len(val_ids) - 1) // block // batch * batch
    whole = []
    for first in range(0, windows, batch):
        o = [w * block for w in range(first, first + batch)]
        x = np.stack([val_ids[i:i + block] for i in o])
        y = np.stack([val_ids[i + 1:i + block + 1] for i in o])
        whole.append(float(loss(p, jnp.asarray(x), jnp.asarray(y))))
    print(f"gpt train\t{iters}\twall {wall:.1f} s\tmedian step {statistics.median(times[1:]) * 1e3:.1f} ms"
          f"\tfirst {times[0]:.2f} s\ttrain {tr:.4f}\tval {va:.4f}\twhole val {np.mean(whole):.4f}",
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seqs", default="1024,4096")
    p.add_argument("--gpt", default="")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--train", type=int, default=0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--heads", type=int, default=8)
    a = p.parse_args()
    if a.train:
        train(a.train, a.seed)
        return
    rng = np.random.default_rng(7)
    for size in [x for x in a.gpt.split(",") if x]:
        try:
            print(measure_gpt(size, a.reps if size == "cpu" else min(a.reps, 3)), flush=True)
        except Exception as e:
            print(f"gpt step\t{size}\tnan\tnan\tnan\t# {type(e).__name__}: {e}", flush=True)
    for s in [int(x) for x in a.seqs.split(",") if x]:
        q, k, v = (jnp.asarray(rng.uniform(-1, 1, (1, a.heads, s, 64)).astype(np.float32)) for _ in range(3))
        for name, f in [("attention fwd", attention), ("attention grad", grad_of_sum)]:
            try:
                print(measure(name, f, (q, k, v), a.reps), flush=True)
            except Exception as e:  # out of memory at the largest sizes
                print(f"{name}\t{s}\tnan\tnan\tnan\t# {type(e).__name__}", flush=True)


if __name__ == "__main__":
    main()
