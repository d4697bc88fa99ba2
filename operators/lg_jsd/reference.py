"""PyTorch semantics of Liger's generalized JSD (tilegym.suites.liger.cutile.jsd): x = log Q,
y = log P, M = beta P + (1 - beta) Q; per element (fp32) the loss beta P (y - log M) +
(1 - beta) Q (x - log M) and dx = (1 - beta) Q (x - log M) (beta 0: P (y - x) and -P;
beta 1: Q (x - y) and Q (x - y) + Q), each times 1 / (rows not ignored); ignored rows zero."""
import torch


def _terms(x, y, beta):
    xf, yf = x.float(), y.float()
    q, p = torch.exp(xf), torch.exp(yf)
    if beta == 0.0:
        return p * (yf - xf), -p
    if beta == 1.0:
        loss = q * (xf - yf)
        return loss, loss + q
    bp, bq = beta * p, (1.0 - beta) * q
    m = bp + bq
    log_m = torch.log(m)
    return bp * yf + bq * xf - m * log_m, bq * (xf - log_m)


def reference(x, y, label, *, beta, HAS_LABEL, ignore_index):
    """(loss (n_rows, n_cols) f32, dx (n_rows, n_cols) in x's dtype)."""
    n = x.shape[0]
    keep = (label != ignore_index) if HAS_LABEL else torch.ones(n, dtype=torch.bool, device=x.device)
    inv = 1.0 / float(keep.sum())
    loss, dx = _terms(x, y, beta)
    loss = torch.where(keep[:, None], loss * inv, 0.0)
    dx = torch.where(keep[:, None], dx * inv, 0.0)
    return loss, dx.to(x.dtype)


def torch_impl(x, y, label, *, beta, HAS_LABEL, ignore_index):
    """The same in native-dtype ATen ops (the benchmark's torch baseline)."""
    n = x.shape[0]
    keep = (label != ignore_index) if HAS_LABEL else torch.ones(n, dtype=torch.bool, device=x.device)
    inv = 1.0 / keep.sum()
    q, p = torch.exp(x), torch.exp(y)
    m = beta * p + (1.0 - beta) * q
    log_m = torch.log(m)
    loss = (beta * p * (y - log_m) + (1.0 - beta) * q * (x - log_m)).float() * inv * keep[:, None]
    dx = (1.0 - beta) * q * (x - log_m) * inv * keep[:, None]
    return loss, dx
