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
import importlib.util
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

WARMUP = 3
NAME = "jax distributed"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def worker(a):
    """One process: runs the steps and writes its result to <outdir>/<rank>.json."""
    rank, n = a.worker, a.ranks
    out = os.path.join(a.outdir, f"{rank}.json")
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
    with open(out + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(out + ".tmp", out)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no distributed shutdown that could hang on a dead peer


class WorkerError(Exception):
    """A worker's own exception, as `Type: message`."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in procs:
        p.wait()


def stderr_of(outdir, r):
    try:
        with open(os.path.join(outdir, f"{r}.err"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def run(a, size, steps):
    """Starts the processes for one size and returns the output line or raises."""
    with tempfile.TemporaryDirectory() as outdir:
        env = dict(os.environ, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
                   JAX_PLATFORMS="cpu", OMP_NUM_THREADS="1")
        port = free_port()
        procs = []
        try:
            for r in range(a.ranks):
                cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(r), "--ranks", str(a.ranks),
                       "--size", size, "--steps", str(steps), "--outdir", outdir, "--port", str(port),
                       "--collectives", a.collectives]
                with open(os.path.join(outdir, f"{r}.err"), "w") as err:
                    procs.append(subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                  stderr=err, start_new_session=True))
            deadline = time.monotonic() + a.timeout
            finished_at = None
            while any(p.poll() is None for p in procs):
                now = time.monotonic()
                if now > deadline:
                    raise TimeoutError(f"no result within {a.timeout} s")
                done = [p.poll() is not None or os.path.exists(os.path.join(outdir, f"{r}.json"))
                        for r, p in enumerate(procs)]
                if any(done) and finished_at is None:
                    finished_at = now  # one process is finished; the others have 30 s more
                if finished_at is not None and now - finished_at > 30:
                    break
                time.sleep(0.2)
            results = {}
            for r in range(a.ranks):
                path = os.path.join(outdir, f"{r}.json")
                if os.path.exists(path):
                    with open(path) as f:
                        results[r] = json.load(f)
            if results.get(0, {}).get("line"):
                return results[0]["line"]
            errors = sorted((v["time"], r, v["error"]) for r, v in results.items() if "error" in v)
            if errors:  # the first process to fail is the cause; the others lost their peer
                raise WorkerError(f"{errors[0][2]} (process {errors[0][1]})")
            codes = [p.poll() for p in procs]
            for r, p in enumerate(procs):  # a rank that died without a word: the end of its stderr
                last = [x for x in stderr_of(outdir, r).splitlines() if x.strip()]
                if p.returncode and last:
                    raise WorkerError(f"ChildProcessError: process {r} exited with code {p.returncode}: "
                                      f"{' / '.join(last[-3:])[:400]}")
            raise RuntimeError(f"processes ended without a result (exit codes {codes})")
        finally:
            kill(procs)
            for r in range(len(procs)):
                sys.stderr.write(stderr_of(outdir, r))
            sys.stderr.flush()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="cpu", help="cpu, gpu or a comma list")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=0, help="timed steps (default 30 at cpu, 5 at gpu)")
    p.add_argument("--collectives", default="gloo", help="jax_cpu_collectives_implementation: gloo or mpi")
    p.add_argument("--timeout", type=float, default=600, help="seconds per size")
    p.add_argument("--worker", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--outdir", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker >= 0:
        worker(a)
        return
    if importlib.util.find_spec("jax") is None:
        print("# jax not installed: skipped", flush=True)
        return
    for size in [s for s in a.size.split(",") if s]:
        steps = a.steps or (30 if size == "cpu" else 5)
        try:
            if a.ranks < 1:
                raise ValueError(f"--ranks {a.ranks}")
            print(run(a, size, steps), flush=True)
        except BaseException as e:
            why = e if isinstance(e, WorkerError) else f"{type(e).__name__}: {e}"
            print(f"{NAME}\t{size}\t{a.ranks}\tnan\tnan\t# {why}".replace("\n", " "), flush=True)
            if isinstance(e, KeyboardInterrupt):
                raise


if __name__ == "__main__":
    main()
