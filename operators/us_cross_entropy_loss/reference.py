"""PyTorch semantics of Unsloth's fast cross-entropy (tilegym.suites.unsloth.cutile.
cross_entropy_loss): logits z = x * LOGIT_SCALE (if enabled), then SOFTCAP tanh(z / SOFTCAP) (if
enabled), in fp32; lse = logsumexp(z); loss = lse - z_label (0 where the label is -100); the
gradient dloss (softmax(z) - [label]) through the softcap and the scale. Labels: every 8th row
from the 4th is -100, the others spread over the vocabulary."""
import torch

IGNORE = -100


def labels(logits):
    """(n_rows,) int64 labels in [0, V), -100 on rows 3, 11, 19, ..."""
    n, v = logits.shape
    t = (torch.arange(n, device=logits.device, dtype=torch.int64) * 7919 + 13) % v
    t[3::8] = IGNORE
    return t


def _z(logits, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE):
    z = logits.float()
    if DO_LOGIT_SCALING:
        z = LOGIT_SCALE * z
    if DO_SOFTCAPPING:
        z = SOFTCAP * torch.tanh(z / SOFTCAP)
    return z


def _label_logit(z, labels):
    keep = labels != IGNORE
    return keep, z.gather(1, torch.where(keep, labels, 0)[:, None])[:, 0]


def row_logsumexp(logits, labels, dloss, *, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE):
    """(n_rows,) f32: the forward's logsumexp, which the backward reads."""
    return torch.logsumexp(_z(logits, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE), dim=-1)


def forward_reference(logits, labels, *, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE):
    """(loss (n_rows,) f32: lse - z_label, 0 for an ignored row; logsumexp (n_rows,) f32)."""
    z = _z(logits, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE)
    lse = torch.logsumexp(z, dim=-1)
    keep, zl = _label_logit(z, labels)
    return torch.where(keep, lse - zl, 0.0), lse


def forward_torch(logits, labels, *, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE):
    """torch's per-row cross_entropy on the fp32 (scaled, softcapped) logits, and logsumexp."""
    z = _z(logits, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE)
    loss = torch.nn.functional.cross_entropy(z, labels, ignore_index=IGNORE, reduction="none")
    return loss, torch.logsumexp(z, dim=-1)


def chunked_forward_reference(logits, labels, *, N_CHUNKS, BLOCK_SIZE, DO_SOFTCAPPING, SOFTCAP,
                              DO_LOGIT_SCALING, LOGIT_SCALE):
    """(loss (n_rows,) f32: -z_label, 0 for an ignored row (the host adds the logsumexp);
    chunk_logsumexp (n_rows, N_CHUNKS) f32: each BLOCK_SIZE-column chunk's logsumexp)."""
    z = _z(logits, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE)
    n, v = z.shape
    pad = torch.full((n, N_CHUNKS * BLOCK_SIZE - v), -torch.inf, device=z.device)
    lse = torch.logsumexp(torch.cat([z, pad], dim=1).view(n, N_CHUNKS, BLOCK_SIZE), dim=-1)
    keep, zl = _label_logit(z, labels)
    return torch.where(keep, -zl, 0.0), lse


def chunked_forward_torch(logits, labels, *, N_CHUNKS, BLOCK_SIZE, DO_SOFTCAPPING, SOFTCAP,
                          DO_LOGIT_SCALING, LOGIT_SCALE):
    """The same in ATen ops on the fp32 logits."""
    return chunked_forward_reference(logits, labels, N_CHUNKS=N_CHUNKS, BLOCK_SIZE=BLOCK_SIZE,
                                     DO_SOFTCAPPING=DO_SOFTCAPPING, SOFTCAP=SOFTCAP,
                                     DO_LOGIT_SCALING=DO_LOGIT_SCALING, LOGIT_SCALE=LOGIT_SCALE)


def backward_reference(logits, labels, dloss, logsumexp, *, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING,
                       LOGIT_SCALE):
    """grad_logits (n_rows, V) in the logits' dtype: dloss (exp(z - lse) - [label]) times the
    softcap's 1 - tanh^2 and the scale; 0 for an ignored row."""
    x = logits.float()
    if DO_LOGIT_SCALING:
        x = x * LOGIT_SCALE
    t = torch.tanh(x / SOFTCAP) if DO_SOFTCAPPING else None
    z = SOFTCAP * t if DO_SOFTCAPPING else x
    keep = labels != IGNORE
    y = torch.exp(z - logsumexp[:, None])
    y = y - torch.zeros_like(y).scatter_(1, torch.where(keep, labels, 0)[:, None], 1.0) * keep[:, None]
    if DO_LOGIT_SCALING:
        y = y * LOGIT_SCALE
    if DO_SOFTCAPPING:
        y = y * (1.0 - t * t)
    return (torch.where(keep, dloss, 0.0)[:, None] * y).to(logits.dtype)


def backward_torch(logits, labels, dloss, logsumexp, *, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING,
                   LOGIT_SCALE):
    """The gradient by autograd through torch's cross_entropy on the fp32 logits."""
    x = logits.float().requires_grad_(True)
    z = _z(x, DO_SOFTCAPPING, SOFTCAP, DO_LOGIT_SCALING, LOGIT_SCALE)
    loss = torch.nn.functional.cross_entropy(z, labels, ignore_index=IGNORE, reduction="none")
    (g,) = torch.autograd.grad(loss, x, dloss)
    return g.to(logits.dtype)
