#!/usr/bin/env bash
# The wall time of examples/cnn's Fashion-MNIST benchmark network trained for E epochs (all
# 60,000 training images, batches of 128, Adam 1e-3, the test accuracy after each epoch),
# against the same training in PyTorch (benches/torch_cnn_epochs.py: eager on channels-last
# tensors, PyTorch's fastest mode for this network in `cargo bench --bench cnn_step`), in the
# same run. Both times cover the training loop and the evaluations, the first step's
# compilation included.
#
# Run: bash benches/cnn_epochs.sh [epochs, default 2]   (JITFUSE_BENCH_TORCH=0 skips PyTorch)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs="${1:-2}"
cargo build --release --example cnn >/dev/null 2>&1 || cargo build --release --example cnn
out="$(mktemp -d)"
./target/release/examples/cnn --model cnn --epochs "$epochs" --out "$out" >"$out/jitfuse.log"
grep -E "^epoch" "$out/jitfuse.log" | sed 's/^/jitfuse /'
j_wall="$(sed -n 's/^trained [0-9]* epochs in \([0-9.]*\) s.*/\1/p' "$out/jitfuse.log")"
j_acc="$(grep -E "^epoch $epochs:" "$out/jitfuse.log" | sed 's/.*test accuracy \([0-9.]*\) %.*/\1/')"
t_wall="—"
t_acc="—"
ratio="—"
if [ "${JITFUSE_BENCH_TORCH:-1}" = "0" ]; then
    echo "(torch_cnn_epochs.py skipped: JITFUSE_BENCH_TORCH=0)"
elif ! python3 -c "import torch" 2>/dev/null; then
    echo "(torch_cnn_epochs.py skipped: PyTorch is not installed; pip install torch)"
else
    python3 benches/torch_cnn_epochs.py --epochs "$epochs" --mode channels_last >"$out/torch.log"
    sed 's/^/PyTorch /' "$out/torch.log" | grep -E "epoch"
    line="$(tail -1 "$out/torch.log")"
    t_wall="$(echo "$line" | cut -f3)"
    t_acc="$(echo "$line" | cut -f4)"
    ratio="$(python3 -c "print(f'{$j_wall / $t_wall:.2f}')")"
fi
echo
echo "| network | epochs | jitfuse s | jitfuse test accuracy % | PyTorch (channels last) s | PyTorch test accuracy % | jitfuse / PyTorch |"
echo "|---|---|---|---|---|---|---|"
echo "| fmnist_cnn | $epochs | $j_wall | $j_acc | $t_wall | $t_acc | $ratio |"
rm -rf "$out"
