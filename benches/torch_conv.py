# pip install torch
"""The convolutions of benches/conv.rs in PyTorch (CPU, f32): 3x3 stride-1 'same'
convolutions, forward, input gradient and weight gradient, eager on channels-last tensors
(PyTorch's oneDNN path) and under torch.compile.

Run: python3 benches/torch_conv.py --shapes 128_32_16_16,16_56_64_64 [--reps 11]
(`cargo bench --bench conv` runs it itself when PyTorch is installed.)
Prints one tab-separated line per case: op and mode, shape key (N_side_C_F), median ms.
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def timed(f, reps):
    f()
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def cases(key, reps):
    n, side, c, f = (int(v) for v in key.split("_"))
    g = torch.Generator().manual_seed(7)
    cl = torch.channels_last
    x = torch.rand(n, c, side, side, generator=g).to(memory_format=cl)
    w = torch.rand(f, c, 3, 3, generator=g).to(memory_format=cl)
    dy = torch.rand(n, f, side, side, generator=g).to(memory_format=cl)
    fwd = lambda x, w: F.conv2d(x, w, padding=1)
    ig = lambda x, w, dy: torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1)
    wg = lambda x, w, dy: torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1)

    def grads(f, which):
        # The gradient through autograd (what a training step runs).
        def run():
            xs = x.detach().requires_grad_(which == 0)
            ws = w.detach().requires_grad_(which == 1)
            y = f(xs, ws)
            (gx,) = torch.autograd.grad(y, [xs if which == 0 else ws], dy)
            return gx
        return run

    for mode in ["eager", "compiled"]:
        f = fwd if mode == "eager" else torch.compile(fwd)
        with torch.no_grad():
            yield f"forward {mode}", timed(lambda: f(x, w), reps)
        yield f"input grad {mode}", timed(grads(f, 0), reps)
        yield f"weight grad {mode}", timed(grads(f, 1), reps)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", required=True)
    p.add_argument("--reps", type=int, default=11)
    a = p.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    for key in a.shapes.split(","):
        for name, ms in cases(key, a.reps):
            print(f"{name}\t{key}\t{ms:.3f}", flush=True)


if __name__ == "__main__":
    main()
