"""PyTorch semantics of TileGym's LayerNorm (tilegym.ops.cutile.layer_norm) on x viewed as
(N, C, W), normalised over C: mean and rstd = 1 / sqrt(var + EPS) per (n, w) in fp32 (the
variance of x - mean), y = (x - mean) * rstd * (w + WEIGHT_SHIFT) + b rounded to x's dtype.
The tiled kernel adds WEIGHT_SHIFT to w in fp32; the gather kernel adds it in w's own dtype
before the fp32 math. EPS and WEIGHT_SHIFT reach these functions as keywords (the variant's
constexprs)."""
import torch


def _layer_norm(x, w_shifted, b, eps):
    xf = x.float()
    mean = xf.mean(dim=1)                                    # (N, W)
    rstd = torch.rsqrt((xf - mean[:, None, :]).pow(2).mean(dim=1) + eps)
    y = (xf - mean[:, None, :]) * rstd[:, None, :] * w_shifted.float()[None, :, None] + b.float()[None, :, None]
    return y.to(x.dtype), mean, rstd


def reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, *, EPS: float, WEIGHT_SHIFT: float):
    """(y (N, C, W) in x's dtype, mean (N, W) fp32, rstd (N, W) fp32) from x (N, C, W) and
    w, b (C,): _layer_norm_fwd_kernel."""
    return _layer_norm(x, w.float() + WEIGHT_SHIFT, b, EPS)


def gather_reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, *, EPS: float, WEIGHT_SHIFT: float):
    """:func:`reference` with w + WEIGHT_SHIFT rounded to w's dtype: _layer_norm_fwd_kernel_gather."""
    return _layer_norm(x, w + WEIGHT_SHIFT, b, EPS)


def torch_impl(x, w, b, *, EPS, WEIGHT_SHIFT):
    """PyTorch's own layer norm in the native dtype (ATen; y only), the "is either port worth
    using over torch?" baseline the benchmark times next to both kernels: over C of (N, C, W)
    as over the last dim of the transposed (N, W, C)."""
    return torch.nn.functional.layer_norm(x.transpose(1, 2), (x.shape[1],), w + WEIGHT_SHIFT, b, EPS).transpose(1, 2)


def gather_torch(x, w, b, *, EPS, WEIGHT_SHIFT):
    """:func:`torch_impl` for the gather kernel (W = 1 in practice: a plain layer norm)."""
    return torch_impl(x, w, b, EPS=EPS, WEIGHT_SHIFT=WEIGHT_SHIFT)
