"""Batched GEMM C[z] = A[z] @ B[z] with fp32 accumulation (ct.mma), K-loop over BK tiles.

A: (Z, M, K), B: (Z, K, N), C: (Z, M, N). The batch index is grid axis 2; each block loads
(1, BM, BK) and (1, BK, BN) tiles through 3-D partition views and reshapes them to 2-D for
the MMA. Ragged edges are zero-padded on load and clipped on store.
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def bmm_kernel(a, b, c, BM: ConstInt, BN: ConstInt, BK: ConstInt):
    """a: (Z, M, K), b: (Z, K, N), c: (Z, M, N), f16/bf16; grid = (cdiv(M, BM), cdiv(N, BN), Z)."""
    bm = ct.bid(0)
    bn = ct.bid(1)
    z = ct.bid(2)
    k_tiles = ct.num_tiles(a, axis=2, shape=(1, BM, BK))
    acc = ct.full((BM, BN), 0.0, dtype=ct.float32)
    for k in range(k_tiles):
        ta = ct.reshape(ct.load(a, index=(z, bm, k), shape=(1, BM, BK), padding_mode=ct.PaddingMode.ZERO), (BM, BK))
        tb = ct.reshape(ct.load(b, index=(z, k, bn), shape=(1, BK, BN), padding_mode=ct.PaddingMode.ZERO), (BK, BN))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(z, bm, bn), tile=ct.reshape(ct.astype(acc, c.dtype), (1, BM, BN)))


def launch(a, b, c, *, BM, BN, BK):
    """Launch on the current torch stream; grid = (cdiv(M, BM), cdiv(N, BN), Z)."""
    import torch

    grid = ((a.shape[1] + BM - 1) // BM, (b.shape[2] + BN - 1) // BN, a.shape[0])
    ct.launch(torch.cuda.current_stream(), grid, bmm_kernel, (a, b, c, BM, BN, BK))
