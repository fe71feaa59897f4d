"""Benchmark: DeepPoly back-substitution steps with g-BSCR vs dense torch vs torch.sparse.

Builds the tensors DeepPoly creates on
  * an MLP 784-500x5-10 (affine + ReLU layers), and
  * a ConvSmall-shaped net 1x28x28 -conv(16,4x4,s2)-> 16x13x13 -relu-
    conv(32,4x4,s2)-> 32x5x5 -relu- fc100 -relu- fc10,
with batch 100 and 10.  All neurons live in one global index of size N_total;
a coefficient tensor is [batch, curr, N_total] with one non-zero block (the
layer being back-substituted through), of the kind the compiled DeepPoly holds
there: dense for the rows of fully-connected layers, a convolution block (the
conv weight) or a patches block (conv weight times ReLU slopes) for the rows of
conv layers.  One step is ``inner(coef, bound)`` where the bound matrix holds
the layer's weight (dense block or conv block, shared by the batch) or the ReLU
slopes (diagonal block [batch, n]).

Measured side by side in one run (CPU, torch threads as configured):
  * time: median wall-clock of the step (conversions excluded);
  * memory: bytes of the tensors involved (operands + result):
    g-BSCR = sum of block core nbytes, dense = numel * element size,
    torch.sparse = indices + values (COO) / crow+col+values (CSR).
    (CPU has no allocator peak counter; these are exact data sizes.)
Dense steps whose FLOPs exceed --dense-gflop-cap are timed on a row subset and
scaled linearly (marked "extrapolated"); dense ReLU bound matrices [batch, N, N]
larger than --dense-mem-cap-gb are not allocated (time marked "n/a").

Usage: python bench/gbscr_ops.py [--batches 100 10] [--repeat 3]
Writes bench/results/gbscr_ops.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import warnings

import torch

import cfruntime.tensor as T  # noqa: E402
from cfruntime.tensor import ConvBlock, DenseBlock, DiagonalBlock, SparseTensor

GB = 1024 ** 3


def timeit(fn, repeat):
    fn()  # warm-up
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
        del out
    return statistics.median(ts)


def dense_bytes(shape, dtype=torch.float32):
    return math.prod(shape) * torch.tensor([], dtype=dtype).element_size()


def sparse_bytes(t):
    if t.layout == torch.sparse_coo:
        return t._indices().numel() * 8 + t._values().numel() * t.element_size()
    if t.layout == torch.sparse_csr:
        return (t.crow_indices().numel() + t.col_indices().numel()) * 8 + t.values().numel() * t.element_size()
    return t.numel() * t.element_size()


# ------------------------------------------------------------------ networks
def mlp_layers():
    """(name, kind, n_out, extra) in order; offsets follow."""
    layers = [("input", "input", 784, None)]
    n_prev = 784
    for i in range(5):
        layers.append((f"fc{i+1}", "affine", 500, (n_prev,)))
        layers.append((f"relu{i+1}", "relu", 500, None))
        n_prev = 500
    layers.append(("out", "affine", 10, (n_prev,)))
    return layers


def convsmall_layers():
    return [
        ("input", "input", 784, None),
        ("conv1", "conv", 16 * 13 * 13, dict(ci=1, co=16, k=4, s=2, p=0, hw=(28, 28))),
        ("relu1", "relu", 16 * 13 * 13, None),
        ("conv2", "conv", 32 * 5 * 5, dict(ci=16, co=32, k=4, s=2, p=0, hw=(13, 13))),
        ("relu2", "relu", 32 * 5 * 5, None),
        ("fc1", "affine", 100, (800,)),
        ("relu3", "relu", 100, None),
        ("fc2", "affine", 10, (100,)),
    ]


def offsets(layers):
    off, out = 0, {}
    for name, _, n, _ in layers:
        out[name] = (off, n)
        off += n
    return out, off


# ------------------------------------------------------------------ one step
def build_step(layers, idx, batch, g, curr=None, coef_kind="dense"):
    """coef over layer idx's neurons, bound rows of layer idx.

    ``curr`` is the number of rows being back-substituted (default: the next layer's size);
    ``coef_kind`` the block DeepPoly's compiled engine holds for them at this step:
    ``dense`` (rows of a fully-connected layer), ``conv`` (the rows of the conv layer right after
    layer idx: its weight as a convolution block) or ``patches`` (those rows one ReLU further back:
    the conv weight times the ReLU slopes, one kernel per output position)."""
    offs, N = offsets(layers)
    name, kind, n, extra = layers[idx]
    prev_name = layers[idx - 1][0]
    o_cur, _ = offs[name]
    o_prev, n_prev = offs[prev_name]
    if curr is None:
        curr = layers[idx + 1][2] if idx + 1 < len(layers) else n
    if coef_kind == "dense":
        coef_block = DenseBlock(torch.randn(batch, curr, n, generator=g))
    else:
        nxt = next(e for _, k, _, e in layers[idx + 1:] if k == "conv")  # the conv layer whose rows these are
        w = torch.randn(nxt["co"], nxt["ci"], nxt["k"], nxt["k"], generator=g)
        coef_block = ConvBlock(w, nxt["hw"], nxt["s"], nxt["p"], lead=(batch,))
        if coef_kind == "patches":
            coef_block = coef_block.scale_cols(torch.rand(batch, n, generator=g))
        assert coef_block.shape == (batch, curr, n), (coef_block.shape, curr, n)
    coef = SparseTensor((batch, curr, N), 0.0, [((0, 0, o_cur), coef_block)])
    if kind == "affine":
        w = torch.randn(n, n_prev, generator=g) / math.sqrt(n_prev)
        bound = SparseTensor((N, N), 0.0, [((o_cur, o_prev), DenseBlock(w))])
    elif kind == "conv":
        w = torch.randn(extra["co"], extra["ci"], extra["k"], extra["k"], generator=g)
        bound = SparseTensor((N, N), 0.0, [((o_cur, o_prev), ConvBlock(w, extra["hw"], extra["s"], extra["p"]))])
    else:
        lam = torch.rand(batch, n, generator=g)
        bound = SparseTensor((batch, N, N), 0.0, [((0, o_cur, o_prev), DiagonalBlock(lam, 1))])
    return coef, bound, dict(layer=name, kind=kind, coef=coef_kind, N=N, curr=curr, n=n, n_prev=n_prev,
                             o_cur=o_cur, o_prev=o_prev)


def run_step(coef, bound, info, batch, args):
    res = dict(info)
    N, curr = info["N"], info["curr"]
    # ---------------- g-BSCR
    out = T.inner(coef, bound)
    res["gbscr_s"] = timeit(lambda: T.inner(coef, bound), args.repeat)
    res["gbscr_bytes"] = coef.nbytes() + bound.nbytes() + out.nbytes()
    # ---------------- dense torch
    cd = coef.to_dense()
    bshape = bound.shape
    dense_mem = dense_bytes(cd.shape) + dense_bytes(bshape) + dense_bytes((batch, curr, N))
    res["dense_bytes"] = dense_mem
    res["dense_note"] = ""
    if dense_bytes(bshape) > args.dense_mem_cap_gb * GB:
        res["dense_s"] = None
        res["dense_note"] = f"n/a: bound alone {dense_bytes(bshape) / GB:.1f} GB"
    else:
        bd = bound.to_dense()
        # check correctness of g-BSCR against dense on a slice
        ref = cd[:1] @ (bd[:1] if bd.dim() == 3 else bd)
        err = (T.to_dense(T.slice_range(out, 0, 0, 1)) - ref).abs().max().item()
        res["max_abs_err_vs_dense"] = err
        flops = 2.0 * batch * curr * N * N
        rows = batch * curr
        if flops > args.dense_gflop_cap * 1e9:
            sub_rows = max(1, int(rows * args.dense_gflop_cap * 1e9 / flops))
            b_sub = max(1, sub_rows // curr) if bd.dim() == 3 else None
            if bd.dim() == 3:
                c_sub, bd_sub = cd[:b_sub], bd[:b_sub]
                scale = batch / b_sub
            else:
                c_sub = cd.reshape(rows, N)[:sub_rows]
                bd_sub = bd
                scale = rows / sub_rows
            res["dense_s"] = timeit(lambda: torch.matmul(c_sub, bd_sub), 1) * scale
            res["dense_note"] = f"extrapolated x{scale:.1f}"
        else:
            res["dense_s"] = timeit(lambda: torch.matmul(cd, bd), args.repeat)
        del bd
    # ---------------- torch.sparse (batch folded into rows; ReLU bound block-diagonal)
    for layout in ("coo", "csr"):
        if bound.ndim == 3:
            # coef rows of batch b use columns b*N..(b+1)*N; bound = blockdiag over batch
            c2 = cd.reshape(batch * curr, N)
            nz = c2.nonzero(as_tuple=True)
            b_of_row = nz[0] // curr
            idx = torch.stack([nz[0], nz[1] + b_of_row * N])
            cs = torch.sparse_coo_tensor(idx, c2[nz], (batch * curr, batch * N)).coalesce()
            blk = bound.blocks[0]
            lam = blk[1].core  # [batch, n]
            bb, ii = torch.meshgrid(torch.arange(batch), torch.arange(lam.shape[1]), indexing="ij")
            rows_i = (bb * N + info["o_cur"] + ii).flatten()
            cols_i = (bb * N + info["o_prev"] + ii).flatten()
            bs = torch.sparse_coo_tensor(torch.stack([rows_i, cols_i]), lam.flatten(), (batch * N, batch * N)).coalesce()
        else:
            cs = cd.reshape(batch * curr, N).to_sparse().coalesce()
            bs = bound.to_dense().to_sparse().coalesce()
        if layout == "csr":
            cs, bs = cs.to_sparse_csr(), bs.to_sparse_csr()
        try:
            o = torch.sparse.mm(cs, bs)
            res[f"sparse_{layout}_s"] = timeit(lambda: torch.sparse.mm(cs, bs), max(1, args.repeat // 2))
            res[f"sparse_{layout}_bytes"] = sparse_bytes(cs) + sparse_bytes(bs) + sparse_bytes(o)
            del o
        except (RuntimeError, NotImplementedError) as e:  # pragma: no cover
            res[f"sparse_{layout}_s"] = None
            res[f"sparse_{layout}_bytes"] = sparse_bytes(cs) + sparse_bytes(bs)
            res[f"sparse_{layout}_note"] = str(e)[:80]
        del cs, bs
    del cd
    return res


def fmt_t(x):
    return "n/a" if x is None else f"{x * 1e3:9.2f}"


def fmt_b(x):
    return f"{x / 2**20:9.1f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, nargs="+", default=[100, 10])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dense-gflop-cap", type=float, default=60.0)
    ap.add_argument("--dense-mem-cap-gb", type=float, default=3.0)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "gbscr_ops.json"))
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    g = torch.Generator().manual_seed(0)
    nets = {"mlp_5x500": mlp_layers(), "convsmall": convsmall_layers()}
    # the steps DeepPoly spends its time in: through an affine/conv layer and a ReLU, as
    # (layer stepped through, rows back-substituted or None for the next layer's, coefficient block kind)
    steps = {
        "mlp_5x500": [("fc3", None, "dense"), ("relu2", None, "dense"), ("fc2", None, "dense")],
        "convsmall": [
            ("conv2", 100, "dense"),     # fc1's rows through conv2 (dense rows: dense @ conv)
            ("relu1", 800, "conv"),      # conv2's rows (its weight) through relu1 -> patches
            ("conv1", 800, "patches"),   # conv2's rows through conv1 -> patches, composed kernels
            ("fc1", None, "dense"),
        ],
    }
    results = []
    for net, layers in nets.items():
        names = [l[0] for l in layers]
        for batch in args.batches:
            for lname, curr, coef_kind in steps[net]:
                idx = names.index(lname)
                coef, bound, info = build_step(layers, idx, batch, g, curr, coef_kind)
                r = run_step(coef, bound, info, batch, args)
                r.update(net=net, batch=batch)
                results.append(r)
                print(f"done {net} b={batch} {lname} ({coef_kind} coefficients)", file=sys.stderr, flush=True)
    hdr = (f"{'net':10} {'batch':>5} {'step':7} {'kind':6} {'coef':7} | {'gbscr ms':>9} {'dense ms':>9} {'coo ms':>9} "
           f"{'csr ms':>9} | {'gbscr MiB':>9} {'dense MiB':>9} {'coo MiB':>9} {'csr MiB':>9} | "
           f"{'mem d/g':>8} {'t d/g':>7} {'t coo/g':>7} {'t csr/g':>7}  note")
    lines = [hdr, "-" * len(hdr)]
    for r in results:
        def ratio(x):
            return "n/a" if r.get(x) is None else f"{r[x] / r['gbscr_s']:7.1f}"
        r["mem_ratio_dense_over_gbscr"] = r["dense_bytes"] / r["gbscr_bytes"]
        for k in ("dense_s", "sparse_coo_s", "sparse_csr_s"):
            r[f"speedup_vs_{k[:-2]}"] = None if r.get(k) is None else r[k] / r["gbscr_s"]
        lines.append(
            f"{r['net']:10} {r['batch']:5d} {r['layer']:7} {r['kind']:6} {r['coef']:7} | {fmt_t(r['gbscr_s'])} {fmt_t(r.get('dense_s'))} "
            f"{fmt_t(r.get('sparse_coo_s'))} {fmt_t(r.get('sparse_csr_s'))} | {fmt_b(r['gbscr_bytes'])} "
            f"{fmt_b(r['dense_bytes'])} {fmt_b(r['sparse_coo_bytes'])} {fmt_b(r['sparse_csr_bytes'])} | "
            f"{r['mem_ratio_dense_over_gbscr']:8.1f} {ratio('dense_s')} {ratio('sparse_coo_s')} {ratio('sparse_csr_s')}  "
            f"{r['dense_note']}")
    table = "\n".join(lines)
    print(table)
    meta = dict(torch=torch.__version__, threads=torch.get_num_threads(), machine=platform.machine(),
                python=platform.python_version(), device="cpu",
                memory_method="exact data bytes of operands + result (block cores / numel*elsize / indices+values)",
                time_method="median wall-clock of the inner-product step, conversions excluded",
                dense_gflop_cap=args.dense_gflop_cap, dense_mem_cap_gb=args.dense_mem_cap_gb)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(dict(meta=meta, results=results, table=table), f, indent=1, allow_nan=False)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
