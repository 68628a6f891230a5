"""A model of the data-parallel GPT step on N ranks, from the all-reduce's latency and bandwidth
(docs/distributed.md, "The step on many ranks"). No measurement: it extrapolates.

Each rank keeps its batch (weak scaling) and computes its step in `compute` seconds, of which
the backward pass is `backward`. The gradients (`grads` bytes) go in buckets of `s` bytes;
a bucket is a reduce-scatter and an all-gather, which cost together (Rabenseifner's
algorithm, what MPI libraries use for large reductions)

    t(s) = 2 log2(N) a + 2 (N - 1) / N * s / b

for latency `a` and bandwidth `b`. The buckets but the last start while the backward pass
goes on and are hidden behind it as far as it lasts; the last starts when it ends:

    exposed = t(last bucket) + max(0, (buckets - 1) t(s) - backward)

The bucket size that keeps the latency at most a tenth of a bucket's time is
`s* = 10 log2(N) a b`; above it the exposed time grows with `s` (the last bucket).

Run: python3 benches/dist_model.py [--a 3.0e-6 --b 1.5e9 --name loopback]
(`--a`/`--b` add a network, e.g. what `examples/dist_bandwidth` measured.)
"""

import argparse
import math

# Published point-to-point figures (OSU micro-benchmarks and vendors' data sheets): latency,
# unidirectional bandwidth.
NETWORKS = [
    ("InfiniBand HDR (200 Gb/s)", 1.1e-6, 24e9),
    ("100 GbE with RoCE", 2.5e-6, 11e9),
    ("10 GbE, TCP", 30e-6, 1.1e9),
]

# examples/gpt at its two sizes: gradient bytes (f32), a rank's step and backward pass in
# seconds (measured on a 2-core AMD EPYC, one thread per rank, half the global batch).
MODELS = [
    ("CPU size (0.80 M parameters, 6 rows per rank)", 3.2e6, 35e-3, 23e-3),
    ("GPU size (10.7 M parameters, 32 rows per rank)", 42.9e6, 7.5, 5.0),
]

MIN_BUCKET, MAX_BUCKET = 512 << 10, 25 << 20


def bucket_time(n, a, b, s):
    return 2 * math.log2(n) * a + 2 * (n - 1) / n * s / b


def exposed(n, a, b, grads, backward, s):
    buckets = math.ceil(grads / s)
    last = grads - (buckets - 1) * s
    rest = (buckets - 1) * bucket_time(n, a, b, s)
    return bucket_time(n, a, b, last) + max(0.0, rest - backward), buckets * bucket_time(n, a, b, s)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--a", type=float, help="latency in seconds")
    p.add_argument("--b", type=float, help="bandwidth in bytes per second")
    p.add_argument("--name", default="measured")
    args = p.parse_args()
    nets = NETWORKS + ([(args.name, args.a, args.b)] if args.a and args.b else [])
    for model, grads, compute, backward in MODELS:
        default = min(max(grads / 8, MIN_BUCKET), MAX_BUCKET)
        print(f"\n{model}: gradients {grads / 1e6:.1f} MB, buckets of {default / 2**20:.2f} MiB "
              f"(data_parallel's choice)\n")
        print("| network | ranks | all the buckets, ms | exposed, ms | % of the step "
              "| bucket the model predicts (s*) |")
        print("|---|---|---|---|---|---|")
        for name, a, b in nets:
            for n in (8, 64, 512):
                e, total = exposed(n, a, b, grads, backward, default)
                star = 10 * math.log2(n) * a * b
                print(f"| {name} | {n} | {total * 1e3:.2f} | {e * 1e3:.2f} | "
                      f"{100 * e / (compute + e):.2f} | {star / 1e6:.2f} MB |")


if __name__ == "__main__":
    main()
