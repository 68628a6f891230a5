# pip install "jax[cpu]==0.10.2" optax
"""The training steps of benches/cnn_step.rs in JAX (CPU, f32), batches of 128 images of
28x28x1, NHWC/HWIO, `lax.conv_general_dilated` with SAME padding: the Fashion-MNIST
benchmark's CNN with optax's Adam 1e-3, and the ResNet-20-shaped network (batch norm on the
batch's statistics, running averages returned) with optax's SGD 0.1, momentum 0.9. One
`jax.jit` of loss, `value_and_grad` and the update, parameters and state donated.

Run: python3 benches/jax_cnn.py [--reps 11]
(`cargo bench --bench cnn_step` runs it itself when JAX is installed.)
Prints one tab-separated line per case: network, "jit", median ms, temp bytes
(`compiled.memory_analysis().temp_size_in_bytes`).
"""

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import optax
from jax import lax


def conv(x, w, stride=1):
    return lax.conv_general_dilated(
        x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def dense_init(key, i, o):
    b = 1 / i**0.5
    k1, k2 = jax.random.split(key)
    return {
        "w": jax.random.uniform(k1, (i, o), minval=-b, maxval=b),
        "b": jax.random.uniform(k2, (o,), minval=-b, maxval=b),
    }


def conv_init(key, k, i, o, bias=True):
    b = 1 / (k * k * i) ** 0.5
    k1, k2 = jax.random.split(key)
    p = {"w": jax.random.uniform(k1, (k, k, i, o), minval=-b, maxval=b)}
    if bias:
        p["b"] = jax.random.uniform(k2, (o,), minval=-b, maxval=b)
    return p


def cnn_init(key):
    k = jax.random.split(key, 4)
    return {
        "conv1": conv_init(k[0], 5, 1, 32),
        "conv2": conv_init(k[1], 5, 32, 64),
        "fc1": dense_init(k[2], 7 * 7 * 64, 1024),
        "fc2": dense_init(k[3], 1024, 10),
    }


def cnn_logits(p, x):
    h = max_pool(jax.nn.relu(conv(x, p["conv1"]["w"]) + p["conv1"]["b"]))
    h = max_pool(jax.nn.relu(conv(h, p["conv2"]["w"]) + p["conv2"]["b"]))
    h = h.reshape(h.shape[0], -1)
    h = jax.nn.relu(h @ p["fc1"]["w"] + p["fc1"]["b"])
    return h @ p["fc2"]["w"] + p["fc2"]["b"]


def bn_init(c):
    return {"scale": jnp.ones(c), "bias": jnp.zeros(c)}, {"mean": jnp.zeros(c), "var": jnp.ones(c)}


def bn_train(p, s, x):
    mean = x.mean(axis=(0, 1, 2))
    var = x.var(axis=(0, 1, 2))
    y = (x - mean) * lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]
    return y, {"mean": 0.9 * s["mean"] + 0.1 * mean, "var": 0.9 * s["var"] + 0.1 * var}


def resnet_init(key):
    keys = jax.random.split(key, 2 + 27)
    params, stats = {}, {}
    params["stem"] = conv_init(keys[0], 3, 1, 16, bias=False)
    params["stem_bn"], stats["stem"] = bn_init(16)
    blocks, bstats, cin = [], [], 16
    for i in range(9):
        cout = 16 << (i // 3)
        k = keys[2 + 3 * i : 5 + 3 * i]
        b, s = {}, {}
        b["conv1"] = conv_init(k[0], 3, cin, cout, bias=False)
        b["bn1"], s["bn1"] = bn_init(cout)
        b["conv2"] = conv_init(k[1], 3, cout, cout, bias=False)
        b["bn2"], s["bn2"] = bn_init(cout)
        if cin != cout:
            b["proj"] = conv_init(k[2], 1, cin, cout, bias=False)
            b["proj_bn"], s["proj"] = bn_init(cout)
        blocks.append(b)
        bstats.append(s)
        cin = cout
    params["blocks"], stats["blocks"] = blocks, bstats
    params["head"] = dense_init(keys[1], 64, 10)
    return params, stats


def resnet_logits(p, st, x):
    h, stem = bn_train(p["stem_bn"], st["stem"], conv(x, p["stem"]["w"]))
    h = jax.nn.relu(h)
    new = []
    for b, s in zip(p["blocks"], st["blocks"]):
        stride = 2 if "proj" in b else 1
        y, s1 = bn_train(b["bn1"], s["bn1"], conv(h, b["conv1"]["w"], stride))
        y, s2 = bn_train(b["bn2"], s["bn2"], conv(jax.nn.relu(y), b["conv2"]["w"]))
        ns = {"bn1": s1, "bn2": s2}
        if "proj" in b:
            short, ns["proj"] = bn_train(b["proj_bn"], s["proj"], conv(h, b["proj"]["w"], 2))
        else:
            short = h
        h = jax.nn.relu(y + short)
        new.append(ns)
    pooled = h.mean(axis=(1, 2))
    return pooled @ p["head"]["w"] + p["head"]["b"], {"stem": stem, "blocks": new}


def xent(z, y):
    return optax.softmax_cross_entropy_with_integer_labels(z, y).mean()


def timed(step, args, reps):
    args = step(*args)
    args = step(*args)
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        args = step(*args)
        jax.block_until_ready(args)
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=11)
    a = ap.parse_args()
    key = jax.random.PRNGKey(0)
    kx, ky = jax.random.split(jax.random.PRNGKey(7))
    x = jax.random.uniform(kx, (128, 28, 28, 1))
    y = jax.random.randint(ky, (128,), 0, 10)

    adam = optax.adam(1e-3)

    def cnn_step(p, s):
        loss, g = jax.value_and_grad(lambda p: xent(cnn_logits(p, x), y))(p)
        u, s = adam.update(g, s, p)
        return optax.apply_updates(p, u), s

    p = cnn_init(key)
    s = adam.init(p)
    f = jax.jit(cnn_step, donate_argnums=(0, 1))
    temp = f.lower(p, s).compile().memory_analysis().temp_size_in_bytes
    ms = timed(f, (p, s), a.reps)
    print(f"fmnist_cnn\tjit\t{ms:.3f}\t{temp}", flush=True)

    sgd = optax.sgd(0.1, momentum=0.9)

    def resnet_step(p, s, st):
        (loss, st), g = jax.value_and_grad(
            lambda p: (lambda z, st: (xent(z, y), st))(*resnet_logits(p, st, x)), has_aux=True
        )(p)
        u, s = sgd.update(g, s, p)
        return optax.apply_updates(p, u), s, st

    p, st = resnet_init(key)
    s = sgd.init(p)
    f = jax.jit(resnet_step, donate_argnums=(0, 1, 2))
    temp = f.lower(p, s, st).compile().memory_analysis().temp_size_in_bytes
    ms = timed(f, (p, s, st), a.reps)
    print(f"resnet20\tjit\t{ms:.3f}\t{temp}", flush=True)


if __name__ == "__main__":
    main()
