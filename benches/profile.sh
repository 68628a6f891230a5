#!/bin/sh
# Deterministic cost per element of one workload implementation: instructions
# (valgrind callgrind) of 20 calls minus 10 calls, divided by 10 x 16384 elements.
# Usage: benches/profile.sh <W1|W2|W3|W4|chain20> <jit|hand>  (after `cargo bench --no-run`)
set -e
bin=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/deps/workloads-* | grep -v '\.d$' | head -1)
count() {
    JITFUSE_BENCH_PROFILE="$1:$2:$3" RAYON_NUM_THREADS=1 valgrind --tool=callgrind \
        --callgrind-out-file=/dev/null "$bin" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
a=$(count "$1" "$2" 10)
b=$(count "$1" "$2" 20)
echo "$1 $2: $(( (b - a) / 10 )) instructions per call, $(echo "scale=2; ($b - $a) / 163840" | bc) per element"
