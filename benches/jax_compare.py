# pip install "jax[cpu]" numpy
"""The workloads of benches/workloads.rs (W1-W9 of ../shared/anchors/README.md,
plus the dispatch and 20-op chain rows) in JAX (jax.jit, XLA:CPU) and NumPy,
printed as a Markdown table to put beside `cargo bench --bench workloads`.

Run: python3 benches/jax_compare.py [--reps 30] [--tsv FILE]
(`cargo bench --bench workloads` runs it itself as a worker, `--serve`, when
JAX is installed: it takes XLA's samples one at a time, interleaved with its
own, and puts them in the XLA columns of the same table.)

Same shapes, formulas and value ranges as the Rust bench. The values differ:
the Rust bench's xorshift stream is sequential and too slow to replay in
Python, so inputs come from numpy's seeded default_rng.

compile ms = trace + lower + XLA compile of a fresh function (median of 3);
run ms = median of --reps calls after warm-up, each allocating its outputs and
waiting for them (block_until_ready). NumPy ms = median of the same calls in NumPy.
"""

import argparse
import os
import platform
import statistics
import sys
import time

import jax

# The f64 rows need 64-bit types; the f32 rows stay f32 (their inputs are f32 arrays and
# Python constants are weakly typed).
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

N = 4 * 1024 * 1024
R3, C3 = 4096, 1024
N5 = 4096
B6, I6, H6, O6 = 256, 784, 512, 10
N9 = 1024
L8, B8, D8 = 16, 256, 512


def median_s(f, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


# ---- the workloads, written once against an array module `xp` (jnp or np) ----


def w1_gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def w2_axpby(xp, a, b, c):
    return ((a * 2.0 + b) * c - a) / (1.0 + b * b)


def w3_softmax(xp, x):
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def w4_layernorm(xp, x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=-1, keepdims=True)
    return d / xp.sqrt(var + 1e-5) * gamma + beta


def w5_sum_rows(xp, x):
    return x.sum(axis=1)


def w6_mlp(xp, x, w1, b1, w2, b2, y):
    h = xp.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    m = logits.max(axis=-1, keepdims=True)
    shifted = logits - m
    logp = shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))
    return -(y * logp).sum(axis=-1).mean()


def w9_matmul(xp, a, b):
    return a @ b


def tiny_add(xp, x):
    return x + 1.0


def chain20(xp, x):
    y = x * 1.5
    y = y + 0.25
    y = y * x
    y = y - 1.0
    y = xp.abs(y)
    y = y + 1.0
    y = xp.sqrt(y)
    y = y * 0.5
    y = y - x
    y = xp.maximum(y, -2.0)
    y = xp.minimum(y, 2.0)
    y = y * y
    y = y + x
    y = y * 0.125
    y = -y
    y = y + 3.0
    y = 1.0 / y
    y = y * x
    y = y - 0.5
    return xp.abs(y)


# ---- gradients: JAX by autodiff, NumPy by hand ----


def w7_jax(x, w1, b1, w2, b2, y):
    return jax.value_and_grad(lambda p: w6_mlp(jnp, x, *p, y))((w1, b1, w2, b2))


def w7_numpy(x, w1, b1, w2, b2, y):
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0.0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=-1, keepdims=True)
    loss = -(y * (shifted - np.log(s))).sum(axis=-1).mean()
    dlogits = (e / s * y.sum(axis=-1, keepdims=True) - y) / x.shape[0]
    dh = dlogits @ w2.T
    dz1 = dh * (z1 > 0)
    return loss, (x.T @ dz1, dz1.sum(0), h.T @ dlogits, dlogits.sum(0))


def w8_layer(h, w):
    return jnp.tanh(h @ w) + h


def w8_loss(ws, x, per_layer_checkpoint=False):
    h = x
    layer = jax.checkpoint(w8_layer) if per_layer_checkpoint else w8_layer
    for w in ws:
        h = layer(h, w)
    return jnp.sum(h * h)


def w8_variants():
    """(a) plain; (b) each layer under jax.checkpoint; (c), (d) the whole loss
    under jax.checkpoint with the dots_saveable / nothing_saveable policy."""
    pol = jax.checkpoint_policies
    return {
        "W8a chain grad, plain": jax.grad(lambda ws, x: w8_loss(ws, x)),
        "W8b checkpoint per layer": jax.grad(lambda ws, x: w8_loss(ws, x, per_layer_checkpoint=True)),
        "W8c dots_saveable": jax.grad(jax.checkpoint(lambda ws, x: w8_loss(ws, x), policy=pol.dots_saveable)),
        "W8d nothing_saveable": jax.grad(jax.checkpoint(lambda ws, x: w8_loss(ws, x), policy=pol.nothing_saveable)),
    }


def w8_numpy(ws, x):
    hs, ts = [x], []
    for w in ws:
        t = np.tanh(hs[-1] @ w)
        ts.append(t)
        hs.append(t + hs[-1])
    dh = 2.0 * hs[-1]
    grads = [None] * len(ws)
    for i in reversed(range(len(ws))):
        da = dh * (1.0 - ts[i] * ts[i])
        grads[i] = hs[i].T @ da
        dh = dh + da @ ws[i].T
    return grads


# ---- measurement ----


def max_rel_diff(a, b):
    a = [np.asarray(v, dtype=np.float64) for v in jax.tree_util.tree_leaves(a)]
    b = [np.asarray(v, dtype=np.float64) for v in jax.tree_util.tree_leaves(b)]
    worst = 0.0
    for u, v in zip(a, b):
        scale = max(1.0, float(np.abs(v).max(initial=0.0)))
        worst = max(worst, float(np.abs(u - v).max(initial=0.0)) / scale)
    return worst


def compile_jax(fn, args):
    """(compile s: median of 3 fresh compiles, the compiled fn, warmed up by 3 calls)."""
    compiles = []
    for _ in range(3):
        fresh = jax.jit(lambda *a: fn(*a))  # a new function: no cache hit
        t = time.perf_counter()
        compiled = fresh.lower(*args).compile()
        compiles.append(time.perf_counter() - t)
    for _ in range(3):
        jax.block_until_ready(compiled(*args))
    return statistics.median(compiles), compiled


def time_jax(fn, args, reps, calls=1):
    """(compile s, run s per call, output) for a jitted fn of device arrays."""
    compile_s, compiled = compile_jax(fn, args)
    out = jax.block_until_ready(compiled(*args))

    def run():
        for _ in range(calls):
            jax.block_until_ready(compiled(*args))

    return compile_s, median_s(run, reps) / calls, out


def make_cases(rng):
    """(name, jitted-able JAX fn, NumPy fn or None, args, calls per sample) per row."""
    f32 = np.float32

    def u(shape, lo, hi):
        return rng.uniform(lo, hi, size=shape).astype(f32)

    x1 = u(N, -5, 5)
    a2, b2, c2 = u(N, -1, 1), u(N, -1, 1), u(N, -1, 1)
    x3 = u((R3, C3), -4, 4)
    g4, be4 = u(C3, 0.5, 1.5), u(C3, -1, 1)
    x5 = u((N5, N5), -1, 1)
    s1, s2 = 1 / np.sqrt(I6), 1 / np.sqrt(H6)
    mlp = (u((B6, I6), 0, 1), u((I6, H6), -s1, s1), u(H6, -s1, s1), u((H6, O6), -s2, s2), u(O6, -s2, s2),
           np.eye(O6, dtype=f32)[rng.integers(0, O6, B6)])
    a9, b9 = u((N9, N9), -1, 1), u((N9, N9), -1, 1)
    ws8 = [u((D8, D8), -1, 1) / np.sqrt(D8).astype(f32) for _ in range(L8)]
    x8 = u((B8, D8), -1, 1)
    tiny = np.array([1.0, 2.0, 3.0, 4.0], dtype=f32)

    cases = [
        ("W1 gelu_tanh", lambda *a: w1_gelu(jnp, *a), lambda *a: w1_gelu(np, *a), (x1,), 1),
        ("W2 axpby_chain", lambda *a: w2_axpby(jnp, *a), lambda *a: w2_axpby(np, *a), (a2, b2, c2), 1),
        ("W3 softmax_rows", lambda *a: w3_softmax(jnp, *a), lambda *a: w3_softmax(np, *a), (x3,), 1),
        ("W4 layernorm", lambda *a: w4_layernorm(jnp, *a), lambda *a: w4_layernorm(np, *a), (x3, g4, be4), 1),
        ("W5 sum_rows", lambda *a: w5_sum_rows(jnp, *a), lambda *a: w5_sum_rows(np, *a), (x5,), 1),
        ("W6 mlp_fwd", lambda *a: w6_mlp(jnp, *a), lambda *a: w6_mlp(np, *a), mlp, 1),
        ("W7 mlp_grad", w7_jax, w7_numpy, mlp, 1),
    ]
    for name, g in w8_variants().items():
        cases.append((name, g, w8_numpy if name.startswith("W8a") else None, (ws8, x8), 1))
    cases += [
        ("W9 matmul 1024³", lambda *a: w9_matmul(jnp, *a), lambda *a: w9_matmul(np, *a), (a9, b9), 1),
        ("dispatch x[4] + 1 (µs)", lambda *a: tiny_add(jnp, *a), lambda *a: tiny_add(np, *a), (tiny,), 1000),
        ("chain20", lambda *a: chain20(jnp, *a), lambda *a: chain20(np, *a), (x1,), 1),
    ]
    f64 = np.float64
    x1d, x3d, g4d, be4d = x1.astype(f64), x3.astype(f64), g4.astype(f64), be4.astype(f64)
    cases += [
        ("W1f64 gelu_tanh f64", lambda *a: w1_gelu(jnp, *a), lambda *a: w1_gelu(np, *a), (x1d,), 1),
        ("W3f64 softmax_rows f64", lambda *a: w3_softmax(jnp, *a), lambda *a: w3_softmax(np, *a), (x3d,), 1),
        ("W4f64 layernorm f64", lambda *a: w4_layernorm(jnp, *a), lambda *a: w4_layernorm(np, *a),
         (x3d, g4d, be4d), 1),
    ]
    return cases


def row_id(name):
    """"W8a chain grad, plain" -> "W8"; "dispatch x[4] + 1 (µs)" -> "dispatch": the
    ids of benches/workloads.rs (the other W8 variants keep their own ids)."""
    first = name.split()[0]
    return "W8" if first == "W8a" else first


def minor_faults():
    """Minor page faults of this process so far (0 where `resource` is missing: Windows)."""
    try:
        import resource
    except ImportError:
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def serve():
    """Worker mode for `cargo bench --bench workloads`, which interleaves XLA's
    samples with its own so that both see the same machine (its bandwidth
    drifts by 1.5x within minutes). One command per stdin line, one reply line:

      setup <id>  ->  ok <compile s>        (3 fresh compiles, median; then 3 warm-up calls)
      run <id>    ->  <s per call> <minor faults per call>   (one sample: `calls` calls)
      quit
    A command that fails replies `error <message>` (the bench leaves that row's XLA
    columns empty and goes on).

    The worker is idle (blocked on stdin) while the Rust side times its own cases."""
    # Replies go to a copy of the original stdout; anything else printed to stdout (by JAX,
    # XLA or a library) goes to stderr, so it cannot break the line protocol.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    cases = {row_id(c[0]): c for c in make_cases(np.random.default_rng(0))}
    compiled = {}
    print(f"ready JAX {jax.__version__}", file=proto, flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            break
        try:
            if cmd[0] == "setup":
                _, jfn, _, args, calls = cases[cmd[1]]
                dev = jax.tree_util.tree_map(jnp.asarray, args)
                compile_s, fn = compile_jax(jfn, dev)
                compiled[cmd[1]] = (fn, dev, calls)
                reply = f"ok {compile_s:.6e}"
            elif cmd[0] == "run":
                fn, dev, calls = compiled[cmd[1]]
                f0 = minor_faults()
                t = time.perf_counter()
                for _ in range(calls):
                    jax.block_until_ready(fn(*dev))
                s = time.perf_counter() - t
                reply = f"{s / calls:.6e} {(minor_faults() - f0) / calls:.1f}"
            else:
                reply = f"error unknown command {cmd[0]}"
        except Exception as e:  # noqa: BLE001 - reported to the bench, which goes on without it
            reply = f"error {type(e).__name__}: {e}".replace("\n", " ")
        print(reply, file=proto, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--tsv", help="also write `name<TAB>compile s<TAB>run s` per row here")
    ap.add_argument("--serve", action="store_true",
                    help="worker mode for `cargo bench --bench workloads` (see serve())")
    opts = ap.parse_args()
    if opts.serve:
        serve()
        return
    reps = opts.reps
    tsv = open(opts.tsv, "w") if opts.tsv else None
    cases = make_cases(np.random.default_rng(0))

    copy_src = np.ones(256 << 18, dtype=np.float32)
    copy_dst = np.zeros_like(copy_src)
    copy_s = median_s(lambda: np.copyto(copy_dst, copy_src), 15)
    copy_gbs = 2 * copy_src.nbytes / copy_s / 1e9

    print(f"## JAX {jax.__version__} (XLA:CPU, {jax.device_count()} device) and NumPy {np.__version__}, "
          f"{platform.machine()}, medians of {reps}\n")
    print("| workload | JAX compile ms | JAX run ms | NumPy ms | max |JAX − NumPy| (relative) |")
    print("|---|---|---|---|---|")
    for name, jfn, nfn, args, calls in cases:
        dev = jax.tree_util.tree_map(jnp.asarray, args)
        compile_s, run_s, out = time_jax(jfn, dev, reps, calls)
        unit = 1e6 if calls > 1 else 1e3
        if nfn is not None:
            ref = nfn(*args)
            nreps = max(3, reps // 3) if "W8" in name else reps

            def nrun():
                for _ in range(calls):
                    nfn(*args)

            np_s = median_s(nrun, nreps) / calls
            np_txt, diff = f"{np_s * unit:.2f}", f"{max_rel_diff(out, ref):.1e}"
        else:
            np_txt, diff = "", ""
        print(f"| {name} | {compile_s * 1e3:.0f} | {run_s * unit:.2f} | {np_txt} | {diff} |", flush=True)
        if tsv:
            tsv.write(f"{name}\t{compile_s:.6e}\t{run_s:.6e}\n")
    print(f"\nNumPy copy of 256 MiB: {copy_gbs:.2f} GB/s (read + write counted).")
    if tsv:
        tsv.write(f"# JAX {jax.__version__}\n")
        tsv.close()


if __name__ == "__main__":
    main()
