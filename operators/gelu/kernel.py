"""GELU, tanh approximation: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).

Computed in fp32 whatever the storage dtype; one TILE-element 1-D tile per block,
zero padding on the ragged last tile. Formula: Hendrycks & Gimpel, arXiv:1606.08415, eq. (2).
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def gelu_tanh_kernel(x, y, TILE: ConstInt):
    """x, y: 1-D arrays of one dtype; fp32 math; one tile of TILE elements per block."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    inner = 0.7978845608028654 * (t + 0.044715 * t * t * t)
    r = 0.5 * t * (1.0 + ct.tanh(inner))
    ct.store(y, index=(bid,), tile=ct.astype(r, y.dtype))


def launch(x, y, *, TILE):
    """Launch on the current torch stream; grid = (cdiv(numel, TILE),)."""
    import torch

    xf, yf = x.view(-1), y.view(-1)
    grid = ((xf.numel() + TILE - 1) // TILE, 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, gelu_tanh_kernel, (xf, yf, TILE))
