"""Dtype attributes of torch and cupy inside a kernel body of a plain kernel.py (issue 34 item
2 a; test operator). Neither module is installed on tileport's CPU side: cuTile reads both as
its own dtypes, and so does tileport."""
import cupy as cp
import torch
import cuda.tile as ct


@ct.kernel
def foreign_dtype_kernel(x, y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    idx = ct.arange(TILE, dtype=torch.int32) + bid * TILE
    keep = ct.where(idx < n, t.astype(cp.float32), 0.0)
    ct.store(y, index=(bid,), tile=(keep * 2.0).astype(y.dtype))
