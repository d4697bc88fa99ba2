"""PyTorch semantics of Liger's TVD loss (tilegym.suites.liger.cutile.tvd), reduction
'batchmean' as the kernels compute it: per row, loss = scale * sum |p - q| / 2 (fp32) and
grads = scale * sign(p - q) / 2 with sign(0) = -1, rows labelled ignore_index zeroed,
scale = 1 / (rows not ignored)."""
import torch


def _scale_and_keep(p, labels, HAS_LABEL, ignore_index):
    n = p.shape[0]
    if HAS_LABEL:
        keep = labels != ignore_index
        return 1.0 / float(keep.sum()), keep
    return 1.0 / n, torch.ones(n, dtype=torch.bool, device=p.device)


def reference(p, q, labels, *, HAS_LABEL, ignore_index):
    """(loss (n_rows,) f32, grads (n_rows, n_cols) in p's dtype)."""
    scale, keep = _scale_and_keep(p, labels, HAS_LABEL, ignore_index)
    pf, qf = p.float(), q.float()
    loss = (pf - qf).abs().mul(0.5).sum(-1) * scale
    grads = torch.where(pf > qf, 0.5, -0.5) * scale
    loss = torch.where(keep, loss, 0.0)
    grads = torch.where(keep[:, None], grads, 0.0)
    return loss, grads.to(p.dtype)


def torch_impl(p, q, labels, *, HAS_LABEL, ignore_index):
    """The same in native-dtype ATen ops (the benchmark's torch baseline)."""
    scale, keep = _scale_and_keep(p, labels, HAS_LABEL, ignore_index)
    d = p - q
    loss = d.abs().sum(-1, dtype=torch.float32) * (0.5 * scale) * keep
    grads = torch.where(d > 0, 0.5 * scale, -0.5 * scale).to(p.dtype) * keep[:, None]
    return loss, grads
