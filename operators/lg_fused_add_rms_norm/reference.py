"""PyTorch semantics of Liger's fused residual add + RMSNorm
(tilegym.suites.liger.cutile.fused_add_rms_norm): S = X + R in the dtype,
rstd = 1 / sqrt(mean(S^2) + eps) in fp32, Y = S rstd (W + offset) in casting modes llama
(0: S rstd rounded to the dtype, then times W + offset in the dtype) and gemma (1: fp32
throughout); mode none (-1, all in the dtype) is a variant of f32 only, where it is gemma's
fp32. The backward, per row, m = dY (W + offset) (llama: W + offset rounded to the dtype and
the product in the dtype), dX = rstd m - rstd^3 / n sum(m S) S + dS_out, and per block of
num_iters consecutive rows the dW partial sum of dY S rstd (llama: S rstd rounded to the dtype
and the product in the dtype)."""
import torch


def reference(X, R, W, *, casting_mode, eps, offset):
    """(Y (n_rows, n_cols) in X's dtype, S = X + R in X's dtype, RSTD (n_rows,) fp32)."""
    s = X + R
    sf = s.float()
    rstd = torch.rsqrt((sf * sf).mean(-1) + eps)
    if casting_mode == 0:
        sn = (sf * rstd[:, None]).to(X.dtype)
        y = sn * (W.float() + offset).to(X.dtype)
    else:
        y = (sf * rstd[:, None] * (W.float() + offset)).to(X.dtype)
    return y, s, rstd


def torch_impl(X, R, W, *, casting_mode, eps, offset):
    """The add in the dtype, ATen's rms_norm in the native dtype, rstd in fp32 (the benchmark's
    baseline)."""
    s = X + R
    rstd = torch.rsqrt(s.float().pow(2).mean(-1) + eps)
    y = torch.nn.functional.rms_norm(s, (s.shape[-1],), W + offset if offset else W, eps)
    return y, s, rstd


def fused_add_rms_norm_bwd_reference(dY, dS_out, S, W, RSTD, *, casting_mode, offset, num_iters, sm_count):
    """(dX (n_rows, n_cols) in dY's dtype, dW_partial (sm_count, n_cols) fp32: block b sums
    rows b * num_iters ... b * num_iters + num_iters - 1 that exist)."""
    s = S.float()
    r = RSTD.float()[:, None]
    if casting_mode != 0:
        dy = dY.float()
        m = dy * (W.float() + offset)
        dw_term = dy * (s * r)
    else:
        m = (dY * (W.float() + offset).to(dY.dtype)).float()
        dw_term = (dY * (s * r).to(S.dtype)).float()
    c = r * r * r / s.shape[-1] * (m * s).sum(-1, keepdim=True)
    dx = (r * m - c * s + dS_out.float()).to(dY.dtype)
    n_rows, n_cols = s.shape
    rows = sm_count * num_iters
    t = torch.cat([dw_term, dw_term.new_zeros(rows - n_rows, n_cols)]) if rows > n_rows else dw_term[:rows]
    return dx, t.reshape(sm_count, num_iters, n_cols).sum(1)
