"""PyTorch semantics of Liger's KL divergence (tilegym.suites.liger.cutile.kl_div): per element
loss = y_true (log max(y_true, eps) - y_pred), or exp(y_true) (y_true - y_pred) for log
targets, in fp32; per-row sums; the backward's -y_true * scale (-exp(y_true) * scale)."""
import torch
import torch.nn.functional as F


def _pointwise(y_pred, y_true, eps, LOG_TARGET):
    yp, yt = y_pred.float(), y_true.float()
    if LOG_TARGET:
        return torch.exp(yt) * (yt - yp)
    return yt * (torch.log(torch.clamp_min(yt, eps)) - yp)


def kl_div_none_reference(y_pred, y_true, *, eps, LOG_TARGET):
    """The fp32 loss (n_rows, n_cols)."""
    return _pointwise(y_pred, y_true, eps, LOG_TARGET)


def kl_div_rows_reference(y_pred, y_true, *, eps, LOG_TARGET):
    """The fp32 loss summed per row (n_rows,)."""
    return _pointwise(y_pred, y_true, eps, LOG_TARGET).sum(-1)


def kl_div_backward_reference(y_true, *, LOG_TARGET, n_rows):
    """grads (n_rows, n_cols) in y_true's dtype, scale 1 / n_rows (batchmean)."""
    yt = y_true.float()
    g = -(torch.exp(yt) if LOG_TARGET else yt) * (1.0 / n_rows)
    return g.to(y_true.dtype)


def kl_div_none_torch(y_pred, y_true, *, LOG_TARGET):
    """ATen's kl_div (reduction none) in the native dtype (the benchmark's torch baseline)."""
    return F.kl_div(y_pred, y_true, reduction="none", log_target=bool(LOG_TARGET))


def kl_div_rows_torch(y_pred, y_true, *, LOG_TARGET):
    """ATen's kl_div summed per row."""
    return F.kl_div(y_pred, y_true, reduction="none", log_target=bool(LOG_TARGET)).sum(-1, dtype=torch.float32)


def kl_div_backward_torch(y_true, *, LOG_TARGET, n_rows):
    """The gradient in native-dtype ATen ops."""
    return -(torch.exp(y_true) if LOG_TARGET else y_true) * (1.0 / n_rows)
