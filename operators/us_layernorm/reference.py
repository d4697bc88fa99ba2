"""PyTorch semantics of Unsloth's LayerNorm (tilegym.suites.unsloth.cutile.layernorm):
mu = mean(x), inv_var = 1 / sqrt(var(x) + eps) (biased, two-pass) in fp32,
y = (x - mu) inv_var w + b rounded to x's dtype; the backward
dX = inv_var (dY w - mean(dY w) - xhat inv_var^2 mean(dY w xhat)), xhat = x - mu."""
import torch


def reference(X, W, b, *, eps):
    """(Y (n_rows, n_cols) in X's dtype, r (n_rows,) fp32, mu (n_rows,) fp32)."""
    x = X.float()
    mu = x.mean(-1)
    xx = x - mu[:, None]
    r = torch.rsqrt((xx * xx).mean(-1) + eps)
    y = (xx * r[:, None]) * W.float() + b.float()
    return y.to(X.dtype), r, mu


def torch_impl(X, W, b, *, eps):
    """ATen's layer_norm in the native dtype, and its statistics in fp32 (the baseline)."""
    x = X.float()
    mu = x.mean(-1)
    r = torch.rsqrt(x.var(-1, unbiased=False) + eps)
    return torch.nn.functional.layer_norm(X, (X.shape[-1],), W, b, eps), r, mu


def layernorm_backward_reference(dY, X, W, r, mu):
    """dX (n_rows, n_cols) in dY's dtype, fp32 math."""
    x, dy = X.float(), dY.float()
    n = x.shape[-1]
    inv = r.float()[:, None]
    xhat = x - mu.float()[:, None]
    dyw = dy * W.float()
    c1 = inv / n
    c2 = c1 * inv * inv * (dyw * xhat).sum(-1, keepdim=True)
    return (inv * dyw - c1 * dyw.sum(-1, keepdim=True) - c2 * xhat).to(dY.dtype)
