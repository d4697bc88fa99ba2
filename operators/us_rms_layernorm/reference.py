"""PyTorch semantics of Unsloth's RMS LayerNorm (tilegym.suites.unsloth.cutile.rms_layernorm):
inv_var = 1 / sqrt(mean(x^2) + eps) in fp32; y = (x inv_var in w's dtype) * w (OFFSET 0) or
x inv_var (OFFSET + w) in fp32 rounded to x's dtype; the backward
dX = inv_var dY (OFFSET + w) - inv_var^3 / n sum(dY (OFFSET + w) x) x."""
import torch


def reference(X, W, *, eps, OFFSET):
    """(Y (n_rows, n_cols) in X's dtype, r (n_rows,) fp32)."""
    x = X.float()
    r = torch.rsqrt((x * x).mean(-1) + eps)
    normed = x * r[:, None]
    if OFFSET != 0.0:
        y = (normed * (OFFSET + W.float())).to(X.dtype)
    else:
        y = normed.to(W.dtype) * W
    return y, r


def torch_impl(X, W, *, eps, OFFSET):
    """ATen's rms_norm in the native dtype, and its rstd in fp32 (the benchmark's baseline)."""
    r = torch.rsqrt(X.float().pow(2).mean(-1) + eps)
    return torch.nn.functional.rms_norm(X, (X.shape[-1],), W + OFFSET if OFFSET else W, eps), r


def rms_layernorm_backward_reference(dY, X, W, r, *, OFFSET):
    """dX (n_rows, n_cols) in dY's dtype, fp32 math."""
    x, dy = X.float(), dY.float()
    inv = r.float()[:, None]
    dyw = dy * (OFFSET + W.float())
    c = inv * inv * inv / x.shape[-1] * (dyw * x).sum(-1, keepdim=True)
    return (inv * dyw - c * x).to(dY.dtype)
