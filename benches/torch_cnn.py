# pip install torch
"""The training steps of benches/cnn_step.rs in PyTorch (CPU, f32), batches of 128 images of
28x28x1: the Fashion-MNIST benchmark's CNN with Adam 1e-3, and the ResNet-20-shaped network
(batch norm in training mode) with SGD 0.1 and momentum 0.9. Each step: zero the gradients,
forward, cross-entropy, backward, the optimiser's step, the loss read back. Modes: eager
(NCHW), eager on channels-last tensors (oneDNN's preferred layout), and the model under
torch.compile.

Run: python3 benches/torch_cnn.py [--reps 11]
(`cargo bench --bench cnn_step` runs it itself when PyTorch is installed.)
Prints one tab-separated line per case: network, mode, median ms, 0 (no temp figure).
"""

import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(7 * 7 * 64, 1024)
        self.fc2 = nn.Linear(1024, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc2(F.relu(self.fc1(h.flatten(1))))


class Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        stride = 1 if cin == cout else 2
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.proj = None
        if cin != cout:
            self.proj = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.proj is None else self.proj(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for i in range(9):
            cout = 16 << (i // 3)
            blocks.append(Block(cin, cout))
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        h = self.blocks(F.relu(self.stem_bn(self.stem(x))))
        return self.head(h.mean(dim=(2, 3)))


def timed(f, reps):
    f()
    f()
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def step_of(model, opt, x, y):
    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=11)
    a = p.parse_args()
    g = torch.Generator().manual_seed(7)
    x = torch.rand(128, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (128,), generator=g)
    nets = {
        "fmnist_cnn": (Cnn, lambda ps: torch.optim.Adam(ps, lr=1e-3)),
        "resnet20": (ResNet, lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
    }
    for name, (make, optimiser) in nets.items():
        for mode in ["eager", "channels_last", "compiled"]:
            torch.manual_seed(0)
            model = make()
            xs = x
            if mode == "channels_last":
                model = model.to(memory_format=torch.channels_last)
                xs = x.to(memory_format=torch.channels_last)
            opt = optimiser(model.parameters())
            run = torch.compile(model) if mode == "compiled" else model
            ms = timed(step_of(run, opt, xs, y), a.reps)
            print(f"{name}\t{mode}\t{ms:.3f}\t0", flush=True)


if __name__ == "__main__":
    main()
