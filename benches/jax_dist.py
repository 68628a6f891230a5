# pip install "jax[cpu]" optax numpy
"""The data-parallel GPT training step of examples/gpt in JAX: N processes on one machine
joined by `jax.distributed.initialize` (CPU collectives over gloo), one CPU device and one
thread each (the peer of `mpirun -np N gpt --data-parallel`).

The model and recipe are those of benches/jax_transformer.py (`gpt_init`, `gpt_loss`,
`gpt_optimizer`, as in `gpt_step_fn`: clipping at global norm 1, AdamW with decay 0.1 on
the matrices, warm-up and cosine decay). Data parallelism through shardings: a mesh over
the N processes' devices, parameters and optimiser state replicated, the global batch of
the size (12 rows at the CPU size, 64 at the GPU default, drawn as `measure_gpt` draws it)
sharded along its rows, each process supplying its own rows
(`jax.make_array_from_process_local_data`); the step is one `jax.jit` with parameters and
state donated, XLA inserting the gradient all-reduce. Each process times every step after
3 warm-up steps (the first compiles) with `block_until_ready`; the step time reported is
the largest of the processes' medians.

Run: python3 benches/jax_dist.py --size cpu,gpu [--ranks 2] [--steps K]
(the script starts its own N processes, with
XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").
Prints one tab-separated line per size: `jax distributed`, size, ranks, median ms, tokens
per second over the global batch. On stderr: process 0's first loss (about ln 65 = 4.17 at
initialisation), each process's median step and CPU time per step, the compile time, and
whether the processes' parameters agree after the run.
"""

import argparse
import math
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dist_launch import arguments, free_port, launch, main as main_loop, write_result  # noqa: E402

WARMUP = 3
NAME = "jax distributed"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def worker(a):
    """One process: runs the steps and writes its result to <outdir>/<rank>.json."""
    rank, n = a.worker, a.ranks
    try:
        import jax
        import numpy as np

        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_cpu_collectives_implementation", a.collectives)
        jax.distributed.initialize(coordinator_address=f"127.0.0.1:{a.port}", num_processes=n, process_id=rank,
                                   initialization_timeout=120)
        import optax
        from jax.experimental import multihost_utils
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        from jax_transformer import GPT_SIZES, gpt_init, gpt_loss, gpt_optimizer

        size = a.size
        vocab, block, _, heads, _, batch = GPT_SIZES[size]
        if batch % n:
            raise ValueError(f"global batch {batch} does not split into {n} processes")
        rows = batch // n
        devices = jax.devices()
        if len(devices) != n or jax.local_device_count() != 1:
            raise RuntimeError(f"{len(devices)} devices, {jax.local_device_count()} local; expected {n}, 1")
        mesh = Mesh(np.array(devices), ("data",))
        repl = NamedSharding(mesh, P())
        split = NamedSharding(mesh, P("data"))
        opt = gpt_optimizer(2000)

        def step(p, s, ids, targets):
            l, g = jax.value_and_grad(gpt_loss)(p, ids, targets, heads)  # mean over the global batch
            u, s = opt.update(g, s, p)
            return optax.apply_updates(p, u), s, l

        step = jax.jit(step, in_shardings=(repl, repl, split, split), out_shardings=(repl, repl, repl),
                       donate_argnums=(0, 1))
        # The same parameters on every process, made replicated by jit itself.
        p = jax.jit(lambda: gpt_init(size, jax.random.PRNGKey(1337)), out_shardings=repl)()
        s = jax.jit(opt.init, out_shardings=repl)(p)
        rng = np.random.default_rng(3)
        ids = rng.integers(0, vocab, (batch, block)).astype(np.int32)
        tg = rng.integers(0, vocab, (batch, block)).astype(np.int32)
        mine = slice(rank * rows, (rank + 1) * rows)
        ids = jax.make_array_from_process_local_data(split, ids[mine], (batch, block))
        tg = jax.make_array_from_process_local_data(split, tg[mine], (batch, block))

        t = time.perf_counter()
        compiled = step.lower(p, s, ids, tg).compile()
        compile_ms = (time.perf_counter() - t) * 1e3
        text = compiled.as_text()
        collectives = {op: len(re.findall(rf"\b{op}(?:-start)?\(", text))
                       for op in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")}
        collectives = ", ".join(f"{k} {v}" for k, v in collectives.items() if v) or "none"
        for i in range(WARMUP):
            p, s, l = compiled(p, s, ids, tg)
            l = float(l)
            if i == 0 and rank == 0:
                log(f"# jax {size} processes {n}: first loss {l:.4f} (global batch; ln {vocab} = "
                    f"{math.log(vocab):.4f}), compile {compile_ms:.0f} ms, collectives in the step: {collectives}")
        multihost_utils.sync_global_devices("timed steps")
        steps = []
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(a.steps):
            t = time.perf_counter()
            p, s, l = compiled(p, s, ids, tg)
            jax.block_until_ready(l)
            steps.append(time.perf_counter() - t)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        l = float(l)
        if not math.isfinite(l):
            raise FloatingPointError(f"loss {l} after {WARMUP + a.steps} steps")
        check = sum(float(np.asarray(x.addressable_data(0), np.float64).sum()) for x in jax.tree_util.tree_leaves(p))
        every = multihost_utils.process_allgather(
            np.array([statistics.median(steps), cpu / len(steps), wall / len(steps), check]))
        line = None
        if rank == 0:
            for r, (st, c, w, _) in enumerate(every):
                log(f"# jax {size} process {r}: median step {st * 1e3:.2f} ms, cpu {c * 1e3:.2f} ms per "
                    f"{w * 1e3:.2f} ms wall")
            checks = every[:, 3]
            log(f"# jax {size}: last loss {l:.4f}, parameters {'agree' if checks.max() == checks.min() else 'DIFFER'}"
                f" across processes (sums {', '.join(f'{c:.9g}' for c in checks)})")
            ms = every[:, 0].max() * 1e3
            line = f"{NAME}\t{size}\t{n}\t{ms:.3f}\t{batch * block / (ms / 1e3):.1f}"
        result = dict(line=line)
        # Every process is done with the collectives before the coordinator (process 0) goes.
        multihost_utils.sync_global_devices("done")
    except Exception as e:
        result = dict(error=f"{type(e).__name__}: {e}".replace("\n", " ")[:500], time=time.time())
        log(f"# process {rank}: {result['error']}")
    write_result(a.outdir, rank, result)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no distributed shutdown that could hang on a dead peer


def run(a, size, steps):
    """Starts the processes for one size and returns the output line or raises."""
    env = dict(os.environ, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
               JAX_PLATFORMS="cpu", OMP_NUM_THREADS="1")
    port = free_port()

    def args_of(r):
        return ["--ranks", str(a.ranks), "--size", size, "--steps", str(steps), "--port", str(port),
                "--collectives", a.collectives]

    return launch(__file__, a.ranks, args_of, env, a.timeout)


def main():
    p = arguments()
    p.add_argument("--collectives", default="gloo", help="jax_cpu_collectives_implementation: gloo or mpi")
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker >= 0:
        worker(a)
        return
    main_loop(NAME, "jax", a, lambda size, steps: run(a, size, steps))


if __name__ == "__main__":
    main()
