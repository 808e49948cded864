#!/usr/bin/env python3
"""How far honest float32 kernels and low-precision downcasts land from a float32
reference, as the judge measures it: the whole-output relative error ||c - r|| / ||r||
(`rel_l2_error`), and beside it the reference's own rounding noise (how far the reference
moves when its inputs move by one or two ulps, `compare.perturbed`), so that the
honest error can be read as a multiple of that noise. The numbers behind the default
rule's `max_rel_l2` (harness README, "Comparison rules").

Honest candidates: the same reduction in float32 summed in other orders (sequential,
blocked as a GPU kernel's tiles, a binary tree), an online softmax, a blocked Welford
norm, against torch's own float32 operator as the reference (TF32 off). Downcasts: the
output rounded to bfloat16/float16, and the inputs rounded to bfloat16/float16/TF32
before a float32 (or exact) accumulation, as tensor cores do. Sampled: a loss computed
on a share of its elements. Everything runs on the CPU in float32 (the orders are
emulated with NumPy's strictly sequential float32 accumulate):

    /usr/bin/python3 bench/precision_reach.py            # K up to 1M (a few minutes)
    /usr/bin/python3 bench/precision_reach.py --quick    # K up to 64K
"""

import argparse
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "plugins", "eval", "harness"))
from kforge_harness.judge import compare  # noqa: E402

F32 = np.float32


def sequential(values):
    """Row sums added one element after the other, in float32."""
    return np.add.accumulate(values, axis=1, dtype=F32)[:, -1]


def blocked(values, block=256):
    """A GPU kernel's order: each tile of `block` elements summed sequentially, then the
    tiles' sums sequentially (float32 throughout)."""
    rows, count = values.shape
    pad = -count % block
    if pad:
        values = np.concatenate([values, np.zeros((rows, pad), F32)], axis=1)
    tiles = np.add.accumulate(values.reshape(rows, -1, block), axis=2, dtype=F32)[:, :, -1]
    return sequential(tiles)


def tree(values):
    """A binary tree of float32 additions."""
    while values.shape[1] > 1:
        if values.shape[1] % 2:
            values = np.concatenate([values, np.zeros((values.shape[0], 1), F32)], axis=1)
        values = values[:, 0::2] + values[:, 1::2]
    return values[:, 0]


def exact(values):
    return values.astype(np.float64).sum(axis=1).astype(F32)


ORDERS = (("sequential", sequential), ("blocked 256", blocked), ("tree", tree),
          ("exact, rounded", exact))


def rel_l2(cand, ref):
    cand, ref = torch.as_tensor(cand).double(), torch.as_tensor(ref).double()
    return float((cand - ref).norm() / ref.norm())


def noise_ratio(forward, inputs, seed=0):
    """||f(x perturbed) - f(x)|| / ||f(x)||: the reference's rounding noise, as
    compare.OutputInformation measures it (inputs moved by an ulp, compare.perturbed)."""
    reference = forward(*inputs)
    moved = forward(*[compare.perturbed(x, seed + index) for index, x in enumerate(inputs)])
    return rel_l2(moved, reference)


def to_bf16(x):
    return x.bfloat16().float()


def to_fp16(x):
    return x.half().float()


def to_tf32(x):
    """float32 rounded to TF32's 10-bit mantissa (to nearest, ties away), float32 range."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def row(label, error, noise=None):
    text = f"  {label:<46} rel_l2 {error:9.2e}"
    if noise:
        text += f"   = {error / noise:8.1f} x noise"
    print(text, flush=True)


def reductions(lengths, rows):
    print("Row sums (reference: torch.sum, float32)")
    for kind, draw in (("N(0,1)", lambda g, s: torch.randn(s, generator=g)),
                       ("U(0,1)", lambda g, s: torch.rand(s, generator=g)),
                       ("3*N(0,1)+1", lambda g, s: torch.randn(s, generator=g) * 3 + 1)):
        for count in lengths:
            x = draw(torch.Generator().manual_seed(count), (rows, count))
            ref = torch.sum(x, dim=1)
            noise = noise_ratio(lambda t: torch.sum(t, dim=1), [x])
            print(f" {kind}, K={count}: reference noise {noise:.2e}")
            values = x.numpy()
            for name, order in ORDERS:
                row(name, rel_l2(order(values), ref), noise)
            row("inputs rounded to bf16, exact sum", rel_l2(exact(to_bf16(x).numpy()), ref), noise)
            row("output rounded to bf16", rel_l2(to_bf16(ref), ref), noise)


def matmuls(lengths, pairs):
    print("Dot products of rows (reference: torch.matmul, float32, TF32 off)")
    for kind, draw in (("N(0,1)", lambda g, s: torch.randn(s, generator=g)),
                       ("U(0,1)", lambda g, s: torch.rand(s, generator=g))):
        for count in lengths:
            g = torch.Generator().manual_seed(count + 1)
            a, b = draw(g, (pairs, count)), draw(g, (pairs, count))
            forward = lambda p, q: torch.matmul(p.unsqueeze(1), q.unsqueeze(2)).view(-1)
            ref = forward(a, b)
            noise = noise_ratio(forward, [a, b])
            print(f" {kind}, K={count}: reference noise {noise:.2e}")
            products = (a * b).numpy()
            for name, order in ORDERS:
                row(name, rel_l2(order(products), ref), noise)
            for name, cast in (("bf16", to_bf16), ("fp16", to_fp16), ("tf32", to_tf32)):
                rounded = (cast(a).double() * cast(b).double()).sum(dim=1)
                row(f"inputs rounded to {name}, exact accumulation", rel_l2(rounded, ref), noise)
            row("output rounded to bf16", rel_l2(to_bf16(ref), ref), noise)
            row("output rounded to fp16", rel_l2(to_fp16(ref), ref), noise)


def softmaxes(lengths, rows, block=1024):
    print("Softmax over rows (reference: torch.softmax, float32)")
    for count in lengths:
        x = torch.randn(rows, count, generator=torch.Generator().manual_seed(count + 2))
        ref = torch.softmax(x, dim=1)
        noise = noise_ratio(lambda t: torch.softmax(t, dim=1), [x])
        print(f" K={count} (values ~{1 / count:.1e}): reference noise {noise:.2e}")
        # Online softmax as a kernel computes it: a running max and a running sum
        # rescaled tile by tile, in float32.
        tiles = x.view(rows, -1, block)
        running_max = torch.full((rows,), -math.inf)
        running_sum = torch.zeros(rows)
        for index in range(tiles.shape[1]):
            tile = tiles[:, index]
            new_max = torch.maximum(running_max, tile.max(dim=1).values)
            running_sum = (running_sum * torch.exp(running_max - new_max)
                           + torch.exp(tile - new_max[:, None]).sum(dim=1))
            running_max = new_max
        online = torch.exp(x - running_max[:, None]) / running_sum[:, None]
        row("online softmax, tiles of 1024", rel_l2(online, ref), noise)
        two_pass = torch.exp(x - x.max(dim=1, keepdim=True).values)
        sums = torch.from_numpy(sequential(two_pass.numpy()))
        row("exp, then a sequential float32 sum", rel_l2(two_pass / sums[:, None], ref), noise)
        row("output rounded to bf16", rel_l2(to_bf16(ref), ref), noise)
        row("output rounded to fp16", rel_l2(to_fp16(ref), ref), noise)
        row("computed in bf16", rel_l2(torch.softmax(x.bfloat16(), dim=1).float(), ref), noise)


def norms(lengths, rows, block=1024):
    print("Layer norm over rows (reference: torch.layer_norm, float32)")
    for count in lengths:
        x = torch.randn(rows, count, generator=torch.Generator().manual_seed(count + 3)) * 3 + 1
        forward = lambda t: torch.layer_norm(t, (count,))
        ref = forward(x)
        noise = noise_ratio(forward, [x])
        print(f" 3*N(0,1)+1, K={count}: reference noise {noise:.2e}")
        # Welford per tile of 1024, tiles merged one after the other (Chan), in float32.
        tiles = x.view(rows, -1, block)
        count_so_far = torch.zeros(rows)
        mean, m2 = torch.zeros(rows), torch.zeros(rows)
        for index in range(tiles.shape[1]):
            tile = tiles[:, index]
            tile_mean = tile.mean(dim=1)
            tile_m2 = ((tile - tile_mean[:, None]) ** 2).sum(dim=1)
            total = count_so_far + block
            delta = tile_mean - mean
            mean = mean + delta * (block / total)
            m2 = m2 + tile_m2 + delta * delta * (count_so_far * block / total)
            count_so_far = total
        welford = (x - mean[:, None]) / torch.sqrt(m2 / count + 1e-5)[:, None]
        row("blocked Welford, tiles of 1024", rel_l2(welford, ref), noise)
        values = x.numpy()
        mean_seq = torch.from_numpy(sequential(values)) / count
        squares = torch.from_numpy(sequential(values * values)) / count
        naive = (x - mean_seq[:, None]) / torch.sqrt(squares - mean_seq ** 2 + 1e-5)[:, None]
        row("E[x^2] - E[x]^2, sequential sums", rel_l2(naive, ref), noise)
        row("output rounded to bf16", rel_l2(to_bf16(ref), ref), noise)


def small_and_large(count=4096, rows=64):
    print("The same output at other magnitudes: rounding to bf16 / fp16")
    x = torch.randn(rows, count, generator=torch.Generator().manual_seed(5))
    for scale in (1e-8, 1e-6, 1.5e-5, 1.0, 1e4, 1e8):
        out = x * scale
        print(f"  x*{scale:g}: bf16 {rel_l2(to_bf16(out), out):.2e}, "
              f"fp16 {rel_l2(to_fp16(out), out):.2e}", flush=True)
    u = torch.rand(rows, count, generator=torch.Generator().manual_seed(6))
    print(f"  U(0,1): bf16 {rel_l2(to_bf16(u), u):.2e}, fp16 {rel_l2(to_fp16(u), u):.2e}")
    e = torch.exp(torch.randn(rows, count, generator=torch.Generator().manual_seed(7)) * 4)
    print(f"  exp(4*N(0,1)): bf16 {rel_l2(to_bf16(e), e):.2e}, fp16 {rel_l2(to_fp16(e), e):.2e}")


def sampled_losses(sizes):
    print("Mean squared error computed on a share of its elements (scaled up)")
    for count in sizes:
        g = torch.Generator().manual_seed(count + 4)
        a, b = torch.randn(count, generator=g), torch.randn(count, generator=g)
        squares = (a - b) ** 2
        ref = squares.mean()
        other = ((torch.randn(count, generator=g) - torch.randn(count, generator=g)) ** 2).mean()
        print(f"  {count} elements: two trials' losses differ by {rel_l2(other, ref):.2e}")
        for share in (0.5, 0.9, 0.99):
            kept = squares[:int(count * share)].mean()
            row(f"on {share:.0%} of the elements", rel_l2(kept, ref))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="K up to 64K")
    args = parser.parse_args()
    torch.set_num_threads(1)
    lengths = (1024, 65536) if args.quick else (1024, 65536, 1 << 20)
    reductions(lengths, rows=16)
    matmuls(lengths, pairs=16)
    softmaxes((4096, 65536) if args.quick else (4096, 65536, 1 << 20), rows=8)
    norms((4096, 65536) if args.quick else (4096, 65536, 1 << 20), rows=8)
    small_and_large()
    sampled_losses((1 << 20, 1 << 24) if not args.quick else (1 << 20,))


if __name__ == "__main__":
    main()
