"""PyTorch semantics of TileGym's legacy LayerNorms over the last dim of x (M, D)
(tilegym.ops.cutile.layer_norm_legacy), fp32 math, mean and rstd = 1 / sqrt(var + EPS) per row
(fp32). EPS and WEIGHT_SHIFT reach these functions as keywords (the variant's constexprs)."""
import torch


def reference(X: torch.Tensor, W: torch.Tensor, B: torch.Tensor, *, EPS: float, WEIGHT_SHIFT: float):
    """_layer_norm_fwd_kernel: (Y (M, D) in X's dtype, Mean (M,), Rstd (M,)), variance of
    x - mean, y = (x - mean) * rstd * (w + WEIGHT_SHIFT) + b with the shift added in w's dtype."""
    xf = X.float()
    mean = xf.mean(dim=1)
    rstd = torch.rsqrt((xf - mean[:, None]).pow(2).mean(dim=1) + EPS)
    y = (xf - mean[:, None]) * rstd[:, None] * (W + WEIGHT_SHIFT).float() + B.float()
    return y.to(X.dtype), mean, rstd


def persistent_reference(X: torch.Tensor, W: torch.Tensor, B: torch.Tensor, *, EPS: float):
    """_persistent_layer_norm_fwd_kernel: (Y (M, D), Mean (M,), Rstd (M,)) with the one-pass
    variance E[x^2] - mean^2; Y is rounded to bfloat16 (then widened to X's dtype, f32)."""
    xf = X.float()
    mean = xf.mean(dim=1)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=1) - mean * mean + EPS)
    y = (xf - mean[:, None]) * rstd[:, None] * W.float() + B.float()
    return y.to(torch.bfloat16).to(X.dtype), mean, rstd


def torch_impl(X, W, B, *, EPS, WEIGHT_SHIFT):
    """PyTorch's own layer norm in the native dtype (ATen; Y only), the "is either port worth
    using over torch?" baseline the benchmark times next to both kernels."""
    return torch.nn.functional.layer_norm(X, (X.shape[-1],), W + WEIGHT_SHIFT, B, EPS)


def persistent_torch(X, W, B, *, EPS):
    """:func:`torch_impl` for the persistent kernel."""
    return torch.nn.functional.layer_norm(X, (X.shape[-1],), W, B, EPS)
