#!/bin/sh
# Deterministic cost per element of one workload implementation: instructions
# (valgrind callgrind) of 20 calls minus 10 calls, divided by 10 x 16384 x scale elements.
# Usage: benches/profile.sh <W1|W2|W3|W4|W5|chain20> <jit|hand> [scale]  (after `cargo bench --no-run`)
# A scale of 16 or more makes the per-call dispatch (~1-2 K instructions) negligible.
set -e
bin=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/deps/workloads-* | grep -v '\.d$' | head -1)
scale=${3:-1}
count() {
    JITFUSE_BENCH_PROFILE="$1:$2:$3:$scale" RAYON_NUM_THREADS=1 valgrind --tool=callgrind \
        --callgrind-out-file=/dev/null "$bin" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
a=$(count "$1" "$2" 10)
b=$(count "$1" "$2" 20)
echo "$1 $2 x$scale: $(( (b - a) / 10 )) instructions per call, $(echo "scale=3; ($b - $a) / 163840 / $scale" | bc) per element"
