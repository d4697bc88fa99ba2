"""ReLU, y = max(x, 0), over a contiguous tensor viewed as 1-D.

One block handles TILE elements through a partition view (TMA-eligible); the ragged
last tile is zero-padded on load and clipped on store by the view's bounds.
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def relu_kernel(x, y, TILE: ConstInt):
    """x, y: 1-D arrays of the same dtype and length; one tile of TILE elements per block."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    zero = ct.zeros((TILE,), dtype=x.dtype)
    ct.store(y, index=(bid,), tile=ct.maximum(t, zero))


def launch(x, y, *, TILE):
    """Launch on the current torch stream; grid = (cdiv(numel, TILE),)."""
    import torch

    xf, yf = x.view(-1), y.view(-1)
    grid = ((xf.numel() + TILE - 1) // TILE, 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, relu_kernel, (xf, yf, TILE))
