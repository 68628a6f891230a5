# pip install "jax[cpu]==0.10.2"
"""The convolutions of benches/conv.rs in JAX (CPU, f32): 3x3 stride-1 'SAME'
`lax.conv_general_dilated` on NHWC/HWIO, forward, input gradient and weight gradient
(`jax.vjp`), each jitted.

Run: python3 benches/jax_conv.py --shapes 128_32_16_16,16_56_64_64 [--reps 11]
(`cargo bench --bench conv` runs it itself when JAX is installed.)
Prints one tab-separated line per case: op and mode, shape key (N_side_C_F), median ms.
"""

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
from jax import lax


def timed(f, reps):
    jax.block_until_ready(f())
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f())
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def cases(key, reps):
    n, side, c, f = (int(v) for v in key.split("_"))
    k = jax.random.split(jax.random.PRNGKey(7), 3)
    x = jax.random.uniform(k[0], (n, side, side, c))
    w = jax.random.uniform(k[1], (3, 3, c, f))
    dy = jax.random.uniform(k[2], (n, side, side, f))
    fwd = jax.jit(conv)
    ig = jax.jit(lambda x, w, dy: jax.vjp(lambda x: conv(x, w), x)[1](dy)[0])
    wg = jax.jit(lambda x, w, dy: jax.vjp(lambda w: conv(x, w), w)[1](dy)[0])
    yield "forward jit", timed(lambda: fwd(x, w), reps)
    yield "input grad jit", timed(lambda: ig(x, w, dy), reps)
    yield "weight grad jit", timed(lambda: wg(x, w, dy), reps)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", required=True)
    p.add_argument("--reps", type=int, default=11)
    a = p.parse_args()
    for key in a.shapes.split(","):
        for name, ms in cases(key, a.reps):
            print(f"{name}\t{key}\t{ms:.3f}", flush=True)


if __name__ == "__main__":
    main()
