# pip install torch
"""The data-parallel GPT training step of examples/gpt in PyTorch: DistributedDataParallel
over the gloo backend, N processes on one machine, one thread each (the peer of
`mpirun -np N gpt --data-parallel`).

The model and recipe are those of benches/torch_transformer.py (`Gpt`, `GPT_SIZES`, as in
`gpt_case`: AdamW with decay 0.1 on the matrices, warm-up and cosine decay through
LambdaLR, clipping at global norm 1, the loss in f32). The global batch of the size (12
rows at the CPU size, 64 at the GPU default), drawn as `gpt_case` draws it, is split
evenly across the ranks; each step is forward, loss, backward (DDP all-reduces the
gradients in its default 25 MB buckets), clipping, the optimiser and scheduler steps and
`loss.item()`. Each rank times every step after 3 warm-up steps; the step time reported is
the largest of the ranks' medians.

Run: python3 benches/torch_ddp.py --size cpu,gpu [--ranks 2] [--steps K] [--compiled]
(the script starts its own N worker processes; MASTER_ADDR=127.0.0.1, a free port).
Prints one tab-separated line per size: name (`ddp eager`, or `ddp compiled` with the
model under `torch.compile`), size, ranks, median ms, tokens per second over the global
batch. On stderr: rank 0's first loss (about ln 65 = 4.17 at initialisation), each rank's
median step, backward (which includes waiting for the gradient all-reduce) and CPU time
per step, and whether the ranks' parameters agree after the run.
"""

import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dist_launch import arguments, free_port, launch, main as main_loop, write_result  # noqa: E402

WARMUP = 3


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def worker(a):
    """One rank: runs the steps and writes its result to <outdir>/<rank>.json."""
    rank, n = a.worker, a.ranks
    try:
        import torch
        import torch.distributed as dist
        import torch.nn.functional as F
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch_transformer import GPT_SIZES, Gpt

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=n)
        size = a.size
        vocab, block, _, _, _, batch = GPT_SIZES[size]
        if batch % n:
            raise ValueError(f"global batch {batch} does not split into {n} ranks")
        rows = batch // n
        total_steps = 2000
        torch.manual_seed(1337)
        model = Gpt(size)
        ddp = DDP(model)  # broadcasts rank 0's parameters; the seed makes them equal anyway
        decay = [p for p in model.parameters() if p.ndim >= 2]
        rest = [p for p in model.parameters() if p.ndim < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                 {"params": rest, "weight_decay": 0.0}],
                                lr=1e-3, betas=(0.9, 0.99), eps=1e-8)

        def lr(it):
            if it < 100:
                return (it + 1) / 100
            ratio = min(1.0, (it - 100) / max(1, total_steps - 100))
            return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * ratio))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr)
        forward = torch.compile(ddp) if a.compiled else ddp
        g = torch.Generator().manual_seed(3)
        ids = torch.randint(0, vocab, (batch, block), generator=g)
        tg = torch.randint(0, vocab, (batch, block), generator=g)
        ids = ids[rank * rows:(rank + 1) * rows].contiguous()
        tg = tg[rank * rows:(rank + 1) * rows].contiguous()

        def step():
            logits = forward(ids)
            loss = F.cross_entropy(logits.float().view(-1, vocab), tg.view(-1))
            opt.zero_grad(set_to_none=True)
            t = time.perf_counter()
            loss.backward()
            bwd = time.perf_counter() - t
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            return loss.item(), bwd

        for i in range(WARMUP):
            l, _ = step()
            if i == 0:
                mean = torch.tensor([l / n], dtype=torch.float64)
                dist.all_reduce(mean)
                if rank == 0:
                    log(f"# ddp {size} ranks {n}: first loss rank 0 {l:.4f}, "
                        f"global mean {mean.item():.4f} (ln {vocab} = {math.log(vocab):.4f})")
        dist.barrier()
        steps, bwds = [], []
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(a.steps):
            t = time.perf_counter()
            l, bwd = step()
            steps.append(time.perf_counter() - t)
            bwds.append(bwd)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if not math.isfinite(l):
            raise FloatingPointError(f"loss {l} after {WARMUP + a.steps} steps")
        mine = dict(step=statistics.median(steps), bwd=statistics.median(bwds), cpu=cpu / len(steps),
                    wall=wall / len(steps), loss=l,
                    check=float(sum(p.detach().double().sum() for p in model.parameters())))
        every = [None] * n
        dist.all_gather_object(every, mine)
        line = None
        if rank == 0:
            for r, m in enumerate(every):
                log(f"# ddp {size} rank {r}: median step {m['step'] * 1e3:.2f} ms, backward "
                    f"{m['bwd'] * 1e3:.2f} ms, cpu {m['cpu'] * 1e3:.2f} ms per {m['wall'] * 1e3:.2f} ms wall, "
                    f"last loss {m['loss']:.4f}")
            checks = [m["check"] for m in every]
            log(f"# ddp {size}: parameters {'agree' if max(checks) == min(checks) else 'DIFFER'} across ranks "
                f"(sums {', '.join(f'{c:.9g}' for c in checks)})")
            ms = max(m["step"] for m in every) * 1e3
            line = f"{a.name}\t{size}\t{n}\t{ms:.3f}\t{batch * block / (ms / 1e3):.1f}"
        dist.destroy_process_group()
        result = dict(line=line)
    except Exception as e:
        result = dict(error=f"{type(e).__name__}: {e}".replace("\n", " ")[:500], time=time.time())
        log(f"# rank {rank}: {result['error']}")
    write_result(a.outdir, rank, result)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no teardown that could hang on a dead peer


def run(a, size, steps):
    """Starts the ranks for one size and returns the output line or raises."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", TORCHINDUCTOR_COMPILE_THREADS="1")

    def args_of(r):
        extra = ["--compiled"] if a.compiled else []
        return ["--ranks", str(a.ranks), "--size", size, "--steps", str(steps), "--name", a.name] + extra

    return launch(__file__, a.ranks, args_of, env, a.timeout)


def main():
    p = arguments()
    p.add_argument("--compiled", action="store_true", help="the model under torch.compile")
    p.add_argument("--name", help=argparse.SUPPRESS)
    a = p.parse_args()
    a.name = a.name or f"ddp {'compiled' if a.compiled else 'eager'}"
    if a.worker >= 0:
        worker(a)
        return
    main_loop(a.name, "torch", a, lambda size, steps: run(a, size, steps))


if __name__ == "__main__":
    main()
