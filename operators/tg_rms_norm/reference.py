"""PyTorch semantics of TileGym's RMSNorm (tilegym.ops.cutile.rms_norm).

Forward: rstd = 1 / sqrt(mean(x^2) + eps) per row, y = x * rstd * (offset + w), fp32 math, y
rounded to x's dtype; the kernels also store rstd (fp32). eps and offset are constexprs of the
kernels (spelled eps/offset in _rms_norm_kernel_multi_wave_cached, EPS/OFFSET in the others)
and reach these functions as keywords.

Backward (_rms_bwd_kernel): with xhat = x * rstd and wdy = dy * w,
dx = (wdy - xhat * mean(xhat * wdy)) * rstd, and each of the grid's blocks b writes
dw_partial[b] = the sum of dy * xhat over the rows of the TILE_M-row tiles b, b + g, b + 2 g,
... (g blocks); TileGym's host code sums the partials to dw."""
import torch


def rms_norm_reference(x: torch.Tensor, w: torch.Tensor, *, EPS: float, OFFSET: float):
    """(y (M, N) in x's dtype, rstd (M,) fp32) from x (M, N) and w (N,)."""
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1) + EPS)
    return (xf * rstd[:, None] * (OFFSET + w.float())).to(x.dtype), rstd


def reference(x: torch.Tensor, w: torch.Tensor, *, eps: float, offset: float):
    """_rms_norm_kernel_multi_wave_cached's spelling of :func:`rms_norm_reference`."""
    return rms_norm_reference(x, w, EPS=eps, OFFSET=offset)


def torch_impl(x, w, *, eps, offset):
    """PyTorch's own RMSNorm in the native dtype (ATen), the "is either port worth using over
    torch?" baseline the benchmark times next to both kernels (y only; it keeps no rstd)."""
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w + offset, eps)


def rms_norm_torch(x, w, *, EPS, OFFSET):
    """:func:`torch_impl` for the kernels that spell the constexprs EPS/OFFSET."""
    return torch_impl(x, w, eps=EPS, offset=OFFSET)


def _blocks(m: int, tile_m: int, num_sms: int) -> int:
    tiles = -(-m // tile_m)
    return min(num_sms, tiles, 32) if tiles <= 64 else min(num_sms, tiles)


def rms_norm_backward_reference(dy, x, weight, Rstd, *, TILE_M: int, TILE_N: int, num_sms: int):
    """(dx (M, N) in x's dtype, dw_partial (g, TILE_N) fp32) from dy, x (M, N), weight (N,) and
    Rstd (M,) fp32; g = the launch grid (min(num_sms, tiles), at most 32 for 64 tiles or fewer)."""
    m, n = x.shape
    xhat = x.float() * Rstd[:, None]
    wdy = dy.float() * weight.float()
    c = (xhat * wdy).sum(dim=1, keepdim=True) / n
    dx = ((wdy - xhat * c) * Rstd[:, None]).to(x.dtype)
    g = _blocks(m, TILE_M, num_sms)
    per_row = dy.float() * xhat                                   # (M, N)
    block_of_row = (torch.arange(m, device=x.device) // TILE_M) % g
    dw = torch.zeros(g, TILE_N, dtype=torch.float32, device=x.device)
    dw[:, :n].index_add_(0, block_of_row, per_row)
    return dx, dw


def rms_norm_backward_torch(dy, x, weight, Rstd):
    """The backward through ATen in the native dtype (autograd of F.rms_norm): the timing
    baseline of _rms_bwd_kernel (dx and the summed dw)."""
    xr = x.detach().requires_grad_(True)
    wr = weight.detach().requires_grad_(True)
    y = torch.nn.functional.rms_norm(xr, (x.shape[-1],), wr, 1e-6)
    return torch.autograd.grad(y, (xr, wr), dy)
