"""PyTorch semantics of Liger's LayerNorm (tilegym.suites.liger.cutile.layer_norm): per row
mean, rstd = 1 / sqrt(E[x^2] - mean^2 + eps) in fp32, y = (x - mean) rstd w + b; mean, rstd
and y rounded to x's dtype. The backward dx = rstd (w dy - xhat c1 - c2), xhat = (x - mean)
rstd, c1 = mean(xhat w dy), c2 = mean(w dy); the combined kernel also sums dy xhat and dy over
the rows of each block (block b: rows b * rows_per_program ... + rows_per_program)."""
import torch


def reference(x, weight, bias, *, eps):
    """(y (n_rows, n_cols), mean (n_rows,), rstd (n_rows,)), all in x's dtype."""
    xf = x.float()
    mean = xf.mean(-1)
    var = (xf * xf).mean(-1) - mean * mean
    rstd = torch.rsqrt(var + eps)
    y = (xf - mean[:, None]) * rstd[:, None] * weight.float() + bias.float()
    return y.to(x.dtype), mean.to(x.dtype), rstd.to(x.dtype)


def torch_impl(x, weight, bias, *, eps):
    """ATen's layer_norm in the native dtype, and the statistics (the benchmark's baseline)."""
    xf = x.float()
    mean = xf.mean(-1)
    rstd = torch.rsqrt(xf.var(-1, unbiased=False) + eps)
    y = torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)
    return y, mean.to(x.dtype), rstd.to(x.dtype)


def _dx_terms(x, dy, weight, mean, rstd):
    xf, dyf = x.float(), dy.float()
    r = rstd.float()[:, None]
    xhat = (xf - mean.float()[:, None]) * r
    wdy = weight.float() * dyf
    c1 = (xhat * wdy).mean(-1, keepdim=True)
    c2 = wdy.mean(-1, keepdim=True)
    return ((wdy - (xhat * c1 + c2)) * r).to(dy.dtype), xhat, dyf


def layer_norm_dx_reference(x, dy, weight, mean, rstd):
    """dx (n_rows, n_cols) in dy's dtype."""
    return _dx_terms(x, dy, weight, mean, rstd)[0]


def layer_norm_combined_reference(x, dy, weight, mean, rstd, *, num_programs, rows_per_program):
    """(dx, dw_partial (num_programs, n_cols) f32, db_partial (num_programs, n_cols) f32)."""
    dx, xhat, dyf = _dx_terms(x, dy, weight, mean, rstd)
    n_rows, n_cols = x.shape
    rows = num_programs * rows_per_program
    pad = rows - n_rows

    def per_block(t):
        t = torch.cat([t, t.new_zeros(pad, n_cols)]) if pad > 0 else t[:rows]
        return t.reshape(num_programs, rows_per_program, n_cols).sum(1)

    return dx, per_block(dyf * xhat), per_block(dyf)
