"""PyTorch semantics of Liger's RMSNorm (tilegym.suites.liger.cutile.rms_norm), casting modes
llama (0: x * rstd rounded to x's dtype, then times w + offset) and gemma (1: fp32 throughout),
rstd = 1 / sqrt(mean(x^2) + eps) in fp32. The backward dx = rstd m - rstd^3 / n sum(m x) x
with m = dy (w + offset) (llama: a product in the dtype), and per block of rows_per_program
consecutive rows the dw partial sum of dy * (x rstd) (llama: x rstd rounded to the dtype and
the product in the dtype)."""
import torch


def reference(X, W, *, casting_mode, eps, offset):
    """(Y (n_rows, N) in X's dtype, RSTD (n_rows,) fp32)."""
    x = X.float()
    rstd = torch.rsqrt((x * x).mean(-1) + eps)
    if casting_mode == 0:
        xs = (x * rstd[:, None]).to(X.dtype)
        y = (xs.float() * (W.float() + offset)).to(X.dtype)
    else:
        y = (x * rstd[:, None] * (W.float() + offset)).to(X.dtype)
    return y, rstd


def torch_impl(X, W, *, casting_mode, eps, offset):
    """ATen's rms_norm in the native dtype, and rstd in fp32 (the benchmark's baseline)."""
    rstd = torch.rsqrt(X.float().pow(2).mean(-1) + eps)
    return torch.nn.functional.rms_norm(X, (X.shape[-1],), W + offset if offset else W, eps), rstd


def rms_norm_bwd_reference(dY, X, RSTD):
    """dX (n_rows, n_cols) in dY's dtype, fp32 math (no weight)."""
    x, dy = X.float(), dY.float()
    r = RSTD.float()[:, None]
    c = r * r * r / x.shape[-1] * (dy * x).sum(-1, keepdim=True)
    return (r * dy - c * x).to(dY.dtype)


def rms_norm_bwd_w_reference(dY, X, W, RSTD, *, casting_mode, offset, rows_per_program, num_sms):
    """(dX (n_rows, n_cols) in dY's dtype, dW_partial (num_sms, n_cols) fp32)."""
    x = X.float()
    r = RSTD.float()[:, None]
    if casting_mode == 1:
        dy = dY.float()
        m = dy * (W.float() + offset)
        dw_term = dy * x * r
    else:
        m = (dY * (W + offset)).float()
        dw_term = (dY * (x * r).to(dY.dtype)).float()
    c = r * r * r / x.shape[-1] * (m * x).sum(-1, keepdim=True)
    dx = (r * m - c * x).to(dY.dtype)
    n_rows, n_cols = x.shape
    rows = num_sms * rows_per_program
    t = torch.cat([dw_term, dw_term.new_zeros(rows - n_rows, n_cols)]) if rows > n_rows else dw_term[:rows]
    return dx, t.reshape(num_sms, rows_per_program, n_cols).sum(1)
