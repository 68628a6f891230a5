# pip install torch
"""examples/cnn's Fashion-MNIST benchmark network trained in PyTorch (CPU, f32) as the example
trains it: the same data (the idx files of data/fashion-mnist, standardised with the training
set's mean 0.2860 and deviation 0.3530), network (conv 5x5x32 same + ReLU, max-pool 2, conv
5x5x64 + ReLU, max-pool 2, dense 1024 + ReLU, dense 10), Adam 1e-3, batches of 128 in a
shuffled order each epoch, and the test accuracy after each epoch. The wall time covers the
training loop and the evaluations, as the example's "trained ... in" line does.

Run: python3 benches/torch_cnn_epochs.py [--epochs 2] [--mode eager|channels_last|compile]
(`bash benches/cnn_epochs.sh` runs it beside the example.) Prints the test accuracy after each
epoch, then one tab-separated line: mode, epochs, wall seconds, final accuracy.
"""

import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from torch_cnn import Cnn

HERE = os.path.dirname(os.path.abspath(__file__))
MEAN, STD = 0.2860, 0.3530


def read_idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if int.from_bytes(data[:4], "big") != magic:
        raise SystemExit(f"{path}: not an idx file of magic {magic:#x}")
    dims = 1 if magic == 0x0801 else 3
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)


def load(directory, split):
    images = read_idx(os.path.join(directory, f"{split}-images-idx3-ubyte.gz"), 0x0803)
    labels = read_idx(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz"), 0x0801)
    x = (images.astype(np.float32) / 255.0 - MEAN) / STD
    return torch.from_numpy(x.reshape(-1, 1, 28, 28).copy()), torch.from_numpy(
        labels.astype(np.int64)
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--mode", default="channels_last")
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "fashion-mnist"))
    a = ap.parse_args()
    torch.manual_seed(0)
    xs, ys = load(a.data, "train")
    xt, yt = load(a.data, "t10k")
    fmt = torch.channels_last if a.mode == "channels_last" else torch.contiguous_format
    model = Cnn().to(memory_format=fmt)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    run = torch.compile(model) if a.mode == "compile" else model
    xt = xt.contiguous(memory_format=fmt)
    batch, steps = 128, xs.shape[0] // 128
    accuracy = 0.0
    start = time.perf_counter()
    for epoch in range(a.epochs):
        order = torch.randperm(xs.shape[0])
        model.train()
        for b in range(steps):
            idx = order[b * batch : (b + 1) * batch]
            x = xs[idx].contiguous(memory_format=fmt)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(run(x), ys[idx])
            loss.backward()
            opt.step()
            loss.item()
        model.eval()
        with torch.no_grad():
            correct = sum(
                (run(xt[i : i + 1000]).argmax(1) == yt[i : i + 1000]).sum().item()
                for i in range(0, xt.shape[0], 1000)
            )
        accuracy = 100.0 * correct / xt.shape[0]
        print(f"epoch {epoch + 1}: test accuracy {accuracy:.2f} %", flush=True)
    wall = time.perf_counter() - start
    print(f"{a.mode}\t{a.epochs}\t{wall:.2f}\t{accuracy:.2f}")


if __name__ == "__main__":
    main()
