# Needs Open MPI (`mpirun`); PyTorch and JAX for the peer rows (skipped when missing).
"""The data-parallel GPT training step on several processes of one machine, jitfuse against
PyTorch DDP and JAX's `jax.distributed`, in one run.

Rows, alternated round by round so that every row sees the same machine state:

- jitfuse, one process with all the threads (`examples/gpt`, the global batch);
- jitfuse, N ranks of one thread (`mpirun -np N gpt --data-parallel`): the gradients averaged
  by bucketed reduce-scatters and all-gathers started where the backward pass finishes them;
- the same with the optimiser state split over the ranks (`--sharded`);
- PyTorch DDP over gloo, N processes of one thread (`benches/torch_ddp.py`);
- JAX, N processes of one thread with gloo collectives (`benches/jax_dist.py`).

Each row is the median step in milliseconds (jitfuse: rank 0's median over the run, every
rank within a few percent; the peers: the largest of the ranks' medians), then the median
over the rounds. The jitfuse rows also give the time each rank waited for communication the
step did not hide (`dist::time_waiting`), for the rank that waited least and the one that
waited most: the step ends together on every rank, so the faster rank also waits for the
slower one, and the least waiting rank's figure is the communication no rank hid.

Run: python3 benches/distributed.py [--size cpu|gpu] [--ranks 2] [--rounds 3] [--iters N]
(builds `examples/gpt` with `--features mpi` first). Prints the rows as they come, then a
table with ratios: N ranks / one process (the overlap target: at most 1.05) and jitfuse's N
ranks / each peer's (the target: at most 0.5).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPT = os.path.join(ROOT, "target", "release", "examples", "gpt")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def run(cmd, env=None, timeout=3600):
    e = dict(os.environ, **(env or {}))
    p = subprocess.run(cmd, cwd=ROOT, env=e, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def gpt_args(size, iters):
    return [GPT, "--size", size, "--iters", str(iters), "--eval-every", "1000000", "--sample", "0",
            "--checkpoint", os.path.join(ROOT, "target", "gpt-bench-distributed.safetensors")]


def jitfuse_one(size, iters, threads):
    code, out, err = run(gpt_args(size, iters), {"RAYON_NUM_THREADS": str(threads)})
    m = re.search(r"median ([\d.]+) ms per step", out)
    if code != 0 or not m:
        return None, f"exit {code}: {err.strip()[-200:]}"
    return (float(m.group(1)), None), None


def jitfuse_ranks(size, iters, ranks, sharded):
    cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "-x", "RAYON_NUM_THREADS=1"]
    cmd += gpt_args(size, iters) + ["--sharded" if sharded else "--data-parallel"]
    code, out, err = run(cmd, MPI_ENV)
    m = re.search(r"median ([\d.]+) ms per step", out)
    waits = [float(w) for w in re.findall(r"waited ([\d.]+) ms per step", out)]
    if code != 0 or not m:
        return None, f"exit {code}: {(out + err).strip()[-300:]}"
    return (float(m.group(1)), (min(waits), max(waits)) if waits else None), None


def peer(script, size, ranks, steps):
    cmd = [sys.executable, os.path.join(ROOT, "benches", script), "--size", size, "--ranks", str(ranks)]
    if steps:
        cmd += ["--steps", str(steps)]
    code, out, err = run(cmd)
    for line in out.splitlines():
        if line.startswith("#"):
            return None, line
        f = line.split("\t")
        if len(f) >= 4:
            if f[3] == "nan":
                return None, line
            return (float(f[3]), None), None
    return None, f"no result (exit {code}): {err.strip()[-200:]}"


def have(module):
    code, _, _ = run([sys.executable, "-c", f"import {module}"])
    return code == 0


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--size", default="cpu")
    a.add_argument("--ranks", type=int, default=2)
    a.add_argument("--rounds", type=int, default=3)
    a.add_argument("--iters", type=int, default=0, help="jitfuse steps per run (cpu 150, gpu 6)")
    a = a.parse_args()
    iters = a.iters or (150 if a.size == "cpu" else 6)
    peer_steps = 30 if a.size == "cpu" else 4
    if not shutil.which("mpirun"):
        print("# mpirun not found: install Open MPI (openmpi-bin libopenmpi-dev libclang-dev)")
        return
    code, _, err = run(["cargo", "build", "--release", "--features", "mpi", "--example", "gpt"])
    if code != 0:
        print(f"# building examples/gpt with --features mpi failed:\n{err[-2000:]}")
        return
    threads = os.cpu_count() or 1
    rows = [
        (f"jitfuse, 1 process x {threads} threads", lambda: jitfuse_one(a.size, iters, threads)),
        (f"jitfuse, {a.ranks} ranks x 1 thread", lambda: jitfuse_ranks(a.size, iters, a.ranks, False)),
        (f"jitfuse, {a.ranks} ranks x 1 thread, sharded state",
         lambda: jitfuse_ranks(a.size, iters, a.ranks, True)),
    ]
    for module, script, name in [("torch", "torch_ddp.py", "PyTorch DDP (gloo)"),
                                 ("jax", "jax_dist.py", "JAX distributed (gloo)")]:
        if have(module):
            rows.append((f"{name}, {a.ranks} processes x 1 thread",
                         lambda s=script: peer(s, a.size, a.ranks, peer_steps)))
        else:
            print(f"# {module} not installed: the {name} row is skipped")
    results = {name: [] for name, _ in rows}
    waits = {name: [] for name, _ in rows}
    for r in range(a.rounds):
        for name, f in rows:
            got, note = f()
            if got is None:
                print(f"round {r}: {name}: {note}", flush=True)
                continue
            results[name].append(got[0])
            if got[1] is not None:
                waits[name].append(got[1])
            wait = f", waited {got[1][0]:.2f} to {got[1][1]:.2f} ms" if got[1] is not None else ""
            print(f"round {r}: {name}: {got[0]:.1f} ms per step{wait}", flush=True)
    med = {n: statistics.median(v) for n, v in results.items() if v}
    ours = med.get(rows[1][0])
    print(f"\nGPT step, size {a.size}, global batch split over {a.ranks} ranks; "
          f"medians of {a.rounds} rounds\n")
    print("| run | ms per step (rounds) | median | waited ms, least and most waiting rank (% of step) "
          "| jitfuse ranks / this |")
    print("|---|---|---|---|---|")
    for name, _ in rows:
        if name not in med:
            print(f"| {name} | failed | | | |")
            continue
        runs = ", ".join(f"{v:.1f}" for v in results[name])
        w = ""
        if waits[name]:
            lo = statistics.median(w[0] for w in waits[name])
            hi = statistics.median(w[1] for w in waits[name])
            w = f"{lo:.2f} / {hi:.2f} ({100 * lo / med[name]:.1f} / {100 * hi / med[name]:.1f} %)"
        ratio = f"{ours / med[name]:.2f}" if ours else ""
        print(f"| {name} | {runs} | {med[name]:.1f} | {w} | {ratio} |")


if __name__ == "__main__":
    main()
