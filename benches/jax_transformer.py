# pip install "jax[cpu]" numpy
"""Causal attention in JAX (jax.jit, XLA:CPU), the shapes of benches/transformer.rs:
batch 1, 8 heads, head dim 64, f32, `softmax(where(tril, q @ k^T / sqrt(64), -inf)) @ v`,
forward and the gradient of its sum with respect to q, k, v.

Run: python3 benches/jax_transformer.py --seqs 1024,4096 [--reps 5]
(`cargo bench --bench transformer` runs it itself when JAX is installed.)
Prints one tab-separated line per case: name, seq, median ms, temp bytes
(`compiled.memory_analysis().temp_size_in_bytes`), compile ms.
"""

import argparse
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seqs", default="1024,4096")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    rng = np.random.default_rng(7)
    for s in [int(x) for x in a.seqs.split(",")]:
        q, k, v = (jnp.asarray(rng.uniform(-1, 1, (1, 8, s, 64)).astype(np.float32)) for _ in range(3))
        for name, f in [("attention fwd", attention), ("attention grad", grad_of_sum)]:
            try:
                print(measure(name, f, (q, k, v), a.reps), flush=True)
            except Exception as e:  # out of memory at the largest sizes
                print(f"{name}\t{s}\tnan\tnan\tnan\t# {type(e).__name__}", flush=True)


if __name__ == "__main__":
    main()
