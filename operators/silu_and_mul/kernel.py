"""SwiGLU gate: y = silu(x[:, :N]) * x[:, N:] for x of shape (M, 2N), y of shape (M, N).

The launch passes the two halves of x as strided views (no copy), so each block loads a
(BM, BN) tile of gate and of up through partition views and writes one (BM, BN) tile of y.
silu(a) = a * sigmoid(a) = a / (1 + exp(-a)), in fp32.
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def silu_and_mul_kernel(gate, up, y, BM: ConstInt, BN: ConstInt):
    """gate, up, y: (M, N) arrays of one dtype (gate/up may be strided views); 2-D grid of tiles."""
    bm = ct.bid(0)
    bn = ct.bid(1)
    a = ct.astype(ct.load(gate, index=(bm, bn), shape=(BM, BN), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    b = ct.astype(ct.load(up, index=(bm, bn), shape=(BM, BN), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    s = a / (1.0 + ct.exp(-a))
    ct.store(y, index=(bm, bn), tile=ct.astype(s * b, y.dtype))


def launch(x, y, *, BM, BN):
    """x: (M, 2N), y: (M, N); grid = (cdiv(M, BM), cdiv(N, BN))."""
    import torch

    n = y.shape[1]
    gate, up = x[:, :n], x[:, n:]
    grid = ((y.shape[0] + BM - 1) // BM, (n + BN - 1) // BN, 1)
    ct.launch(torch.cuda.current_stream(), grid, silu_and_mul_kernel, (gate, up, y, BM, BN))
