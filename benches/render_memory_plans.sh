#!/usr/bin/env bash
# Renders the memory plans of the train_mlp and GPT examples' training steps to PNG, as a
# user sees them: JITFUSE_DUMP writes each compiled program's plan as SVG, rsvg-convert
# (Debian: librsvg2-bin) draws it. docs/images/ holds the two pictures this wrote.
#
#   bash benches/render_memory_plans.sh [out-dir]     # default: target/memory-plans
set -euo pipefail
out="${1:-target/memory-plans}"
if ! command -v rsvg-convert >/dev/null; then
    echo "rsvg-convert is not installed (apt-get install librsvg2-bin): nothing rendered" >&2
    exit 1
fi
mkdir -p "$out"
dump="$(mktemp -d)"
trap 'rm -rf "$dump"' EXIT
JITFUSE_DUMP="$dump/mlp" cargo run --release --example train_mlp >/dev/null
JITFUSE_DUMP="$dump/gpt" cargo run --release --example gpt -- --iters 2 --eval-every 1000 --sample 5 >/dev/null
rsvg-convert "$dump/mlp/train_step.0.memory.svg" -o "$out/train_step_memory.png"
rsvg-convert "$dump/gpt/train_step.0.memory.svg" -o "$out/gpt_train_step_memory.png"
echo "wrote $out/train_step_memory.png and $out/gpt_train_step_memory.png"
