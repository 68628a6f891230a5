"""Starting the worker processes of benches/torch_ddp.py and benches/jax_dist.py: one process
per rank, each the script itself with `--worker <rank>`, writing its result to
`<outdir>/<rank>.json` (`write_result`): `{"line": ...}` (rank 0's output line) or
`{"error": ..., "time": ...}`. `launch` returns rank 0's line, or raises the first rank's
failure; `main` runs the sizes and prints a `nan` line with the reason for each that fails.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time


class WorkerError(Exception):
    """A worker's own exception, as `Type: message`."""


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_result(outdir, rank, result):
    """A worker's result, written whole (through a temporary file) for `launch` to read."""
    out = os.path.join(outdir, f"{rank}.json")
    with open(out + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(out + ".tmp", out)


def kill(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the worker and anything it started
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


def launch(script, ranks, args_of, env, timeout):
    """Starts `ranks` workers (`python3 script --worker r --outdir d` plus `args_of(r)`) and
    returns rank 0's output line, or raises: the first rank's own error, a rank that died
    without one (the end of its stderr), or no result within `timeout` seconds. Once one rank
    is finished the others have 30 s more. The workers' stderr is printed afterwards."""
    with tempfile.TemporaryDirectory() as outdir:
        procs = []
        try:
            for r in range(ranks):
                cmd = [sys.executable, os.path.abspath(script), "--worker", str(r), "--outdir", outdir]
                with open(os.path.join(outdir, f"{r}.err"), "w") as err:
                    procs.append(subprocess.Popen(cmd + args_of(r), env=env, stdin=subprocess.DEVNULL,
                                                  stdout=subprocess.DEVNULL, stderr=err, start_new_session=True))
            deadline = time.monotonic() + timeout
            finished_at = None
            while any(p.poll() is None for p in procs):
                now = time.monotonic()
                if now > deadline:
                    raise TimeoutError(f"no result within {timeout} s")
                done = [p.poll() is not None or os.path.exists(os.path.join(outdir, f"{r}.json"))
                        for r, p in enumerate(procs)]
                if any(done) and finished_at is None:
                    finished_at = now
                if finished_at is not None and now - finished_at > 30:
                    break
                time.sleep(0.2)
            results = {}
            for r in range(ranks):
                path = os.path.join(outdir, f"{r}.json")
                if os.path.exists(path):
                    with open(path) as f:
                        results[r] = json.load(f)
            if results.get(0, {}).get("line"):
                return results[0]["line"]
            errors = sorted((v["time"], r, v["error"]) for r, v in results.items() if "error" in v)
            if errors:  # the first rank to fail is the cause; the others lost their peer
                raise WorkerError(f"{errors[0][2]} (rank {errors[0][1]})")
            codes = [p.poll() for p in procs]
            for r, p in enumerate(procs):  # a rank that died without a word: the end of its stderr
                last = [x for x in stderr_of(outdir, r).splitlines() if x.strip()]
                if p.returncode and last:
                    raise WorkerError(f"ChildProcessError: rank {r} exited with code {p.returncode}: "
                                      f"{' / '.join(last[-3:])[:400]}")
            raise RuntimeError(f"ranks ended without a result (exit codes {codes})")
        finally:
            kill(procs)
            for r in range(len(procs)):
                sys.stderr.write(stderr_of(outdir, r))
            sys.stderr.flush()


def arguments(description=None):
    """The options both scripts take (`--size`, `--ranks`, `--steps`, `--timeout`) and the
    workers' own; each adds its others."""
    import argparse

    p = argparse.ArgumentParser(description=description)
    p.add_argument("--size", default="cpu", help="cpu, gpu or a comma list")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=0, help="timed steps (default 30 at cpu, 5 at gpu)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per size")
    p.add_argument("--worker", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--outdir", help=argparse.SUPPRESS)
    return p


def main(name, module, a, run):
    """`run(size, steps)` for each size of `a.size` (the default steps: 30 at the CPU size, 5
    at the GPU's), printing its line, or a `nan` line with the reason: a peer's failure is a
    note, not the bench's. Prints a skip note when `module` is not installed."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        print(f"# {module} not installed: skipped", flush=True)
        return
    for size in [s for s in a.size.split(",") if s]:
        steps = a.steps or (30 if size == "cpu" else 5)
        try:
            if a.ranks < 1:
                raise ValueError(f"--ranks {a.ranks}")
            print(run(size, steps), flush=True)
        except BaseException as e:
            why = e if isinstance(e, WorkerError) else f"{type(e).__name__}: {e}"
            print(f"{name}\t{size}\t{a.ranks}\tnan\tnan\t# {why}".replace("\n", " "), flush=True)
            if isinstance(e, KeyboardInterrupt):
                raise
