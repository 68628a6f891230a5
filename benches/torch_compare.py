# pip install torch numpy
"""The workloads of benches/workloads.rs (W1-W9 of ../shared/anchors/README.md, plus the
dispatch and 20-op chain rows and the f64 forms of W1, W3, W4) in PyTorch on the CPU, eager
and under `torch.compile`, as a worker of `cargo bench --bench workloads`, which takes one
sample of each mode right after each of its own (the same protocol as
`benches/jax_compare.py --serve`, with row ids `W1:eager`, `W1:compiled`, ...):

  setup <id>:<mode>  ->  ok <compile s>     (the first call's time; then 3 warm-up calls)
  run <id>:<mode>    ->  <s per call> <minor faults per call>
  quit

Same shapes, formulas and value ranges as the Rust bench (inputs from numpy's seeded
default_rng, as the JAX worker's). Forward rows run under `torch.no_grad()`; gradient rows
(W7, W8) return the loss and the parameters' gradients by `torch.autograd.grad`, their
forward under `torch.compile` in compiled mode (AOTAutograd compiles the backward with it).
PyTorch uses its default thread count (the machine's physical cores).

Run by hand: python3 benches/torch_compare.py --serve, then type the commands.
"""

import os
import sys
import time

import numpy as np
import torch

N = 4 * 1024 * 1024
R3, C3 = 4096, 1024
N5 = 4096
B6, I6, H6, O6 = 256, 784, 512, 10
N9 = 1024
L8, B8, D8 = 16, 256, 512
DISPATCH_CALLS = 1000


# Gelu, softmax and layer norm are PyTorch's own composites, as a user calls them (and as
# jitfuse's eager rows call its composites): each one kernel in eager mode.
def w1_gelu(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def w2_axpby(a, b, c):
    return ((a * 2.0 + b) * c - a) / (1.0 + b * b)


def w3_softmax(x):
    return torch.softmax(x, dim=-1)


def w4_layernorm(x, gamma, beta):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), gamma, beta, eps=1e-5)


def w5_sum_rows(x):
    return x.sum(dim=1)


def w6_mlp(x, w1, b1, w2, b2, y):
    h = torch.relu(x @ w1 + b1)
    logits = h @ w2 + b2
    shifted = logits - logits.amax(dim=-1, keepdim=True)
    logp = shifted - torch.log(torch.exp(shifted).sum(dim=-1, keepdim=True))
    return -(y * logp).sum(dim=-1).mean()


def w8_loss(ws, x):
    h = x
    for w in ws:
        h = torch.tanh(h @ w) + h
    return (h * h).sum()


def w9_matmul(a, b):
    return a @ b


def tiny_add(x):
    return x + 1.0


def chain20(x):
    y = x * 1.5
    y = y + 0.25
    y = y * x
    y = y - 1.0
    y = torch.abs(y)
    y = y + 1.0
    y = torch.sqrt(y)
    y = y * 0.5
    y = y - x
    y = torch.clamp(y, min=-2.0)
    y = torch.clamp(y, max=2.0)
    y = y * y
    y = y + x
    y = y * 0.125
    y = -y
    y = y + 3.0
    y = 1.0 / y
    y = y * x
    y = y - 0.5
    return torch.abs(y)


def grad_of(loss):
    """The loss and the gradients of its parameters (all arguments but the fixed ones)."""

    def run(params, fixed):
        ps = [p.detach().requires_grad_() for p in params]
        value = loss(ps, fixed)
        return value.detach(), torch.autograd.grad(value, ps)

    return run


def make_cases(rng):
    """id -> (fn, args, calls per sample, whether it is a gradient row)."""
    f32 = np.float32

    def u(shape, lo, hi):
        return torch.from_numpy(rng.uniform(lo, hi, size=shape).astype(f32))

    x1 = u(N, -5, 5)
    a2, b2, c2 = u(N, -1, 1), u(N, -1, 1), u(N, -1, 1)
    x3 = u((R3, C3), -4, 4)
    g4, be4 = u(C3, 0.5, 1.5), u(C3, -1, 1)
    x5 = u((N5, N5), -1, 1)
    s1, s2 = 1 / np.sqrt(I6), 1 / np.sqrt(H6)
    xm, mw1, mb1, mw2, mb2 = (u((B6, I6), 0, 1), u((I6, H6), -s1, s1), u(H6, -s1, s1),
                              u((H6, O6), -s2, s2), u(O6, -s2, s2))
    ym = torch.from_numpy(np.eye(O6, dtype=f32)[rng.integers(0, O6, B6)])
    a9, b9 = u((N9, N9), -1, 1), u((N9, N9), -1, 1)
    ws8 = [u((D8, D8), -1, 1) / float(np.sqrt(D8)) for _ in range(L8)]
    x8 = u((B8, D8), -1, 1)
    tiny = torch.tensor([1.0, 2.0, 3.0, 4.0])
    mlp_loss = lambda ps, fixed: w6_mlp(fixed[0], *ps, fixed[1])
    chain_loss = lambda ps, fixed: w8_loss(ps, fixed[0])
    return {
        "W1": (w1_gelu, (x1,), 1, False),
        "W2": (w2_axpby, (a2, b2, c2), 1, False),
        "W3": (w3_softmax, (x3,), 1, False),
        "W4": (w4_layernorm, (x3, g4, be4), 1, False),
        "W5": (w5_sum_rows, (x5,), 1, False),
        "W6": (w6_mlp, (xm, mw1, mb1, mw2, mb2, ym), 1, False),
        "W7": (mlp_loss, ([mw1, mb1, mw2, mb2], (xm, ym)), 1, True),
        "W8": (chain_loss, (ws8, (x8,)), 1, True),
        "W9": (w9_matmul, (a9, b9), 1, False),
        "dispatch": (tiny_add, (tiny,), DISPATCH_CALLS, False),
        "chain20": (chain20, (x1,), 1, False),
        "W1f64": (w1_gelu, (x1.double(),), 1, False),
        "W3f64": (w3_softmax, (x3.double(),), 1, False),
        "W4f64": (w4_layernorm, (x3.double(), g4.double(), be4.double()), 1, False),
    }


def minor_faults():
    try:
        import resource
    except ImportError:
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def prepare(case, mode):
    """A callable running the row once, in `mode` ("eager" or "compiled")."""
    fn, args, _, is_grad = case
    if mode == "compiled":
        torch._dynamo.reset()  # a fresh compile, not a cache hit of another row
        fn = torch.compile(fn)
    elif mode != "eager":
        raise ValueError(f"unknown mode {mode}")
    if is_grad:
        run = grad_of(fn)
        return lambda: run(*args)

    def forward():
        with torch.no_grad():
            return fn(*args)

    return forward


def serve():
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    cases = make_cases(np.random.default_rng(0))
    ready = {}
    print(f"ready PyTorch {torch.__version__.split('+')[0]}", file=proto, flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            break
        try:
            row, mode = cmd[1].split(":")
            if cmd[0] == "setup":
                run = prepare(cases[row], mode)
                t = time.perf_counter()
                run()
                first = time.perf_counter() - t
                for _ in range(3):
                    run()
                ready[cmd[1]] = (run, cases[row][2])
                reply = f"ok {first:.6e}"
            elif cmd[0] == "run":
                run, calls = ready[cmd[1]]
                f0 = minor_faults()
                t = time.perf_counter()
                for _ in range(calls):
                    run()
                s = time.perf_counter() - t
                reply = f"{s / calls:.6e} {(minor_faults() - f0) / calls:.1f}"
            else:
                reply = f"error unknown command {cmd[0]}"
        except Exception as e:  # noqa: BLE001 - reported to the bench, which goes on without it
            reply = f"error {type(e).__name__}: {e}".replace("\n", " ")
        print(reply, file=proto, flush=True)


if __name__ == "__main__":
    if "--serve" not in sys.argv:
        sys.exit(__doc__)
    serve()
