"""PyTorch semantics of Liger's fused cross-entropy (tilegym.suites.liger.cutile.cross_entropy):
per row, fp32, lse = logsumexp of the (softcapped) logits; loss = lse - x_y (weighted), label
smoothing, z-loss, mean scaling; the gradient written over the logits; ignored rows zero.
Targets: every 8th row from the 4th is ignore_index (-100), the others spread over the
vocabulary."""
import torch

IGNORE = -100
SOFTCAP = 30.0          # the manifest's softcap under HAS_SOFTCAPPING


def targets(logits):
    """(n_rows,) int64 class indices in [0, n_cols), ignore_index on rows 3, 11, 19, ..."""
    n, v = logits.shape
    t = (torch.arange(n, device=logits.device, dtype=torch.int64) * 7919 + 13) % v
    t[3::8] = IGNORE
    return t


def _rows(logits, target, weight, label_smoothing, lse_square_scale, HAS_WEIGHT, HAS_SOFTCAPPING,
          REDUCTION_MEAN):
    raw = logits.float()
    x = SOFTCAP * torch.tanh(raw / SOFTCAP) if HAS_SOFTCAPPING else raw
    n, v = x.shape
    keep = target != IGNORE
    y = torch.where(keep, target, 0)
    n_keep = max(int(keep.sum()), 1)
    lse = torch.logsumexp(x, dim=-1)
    x_y = x.gather(1, y[:, None])[:, 0]
    w = weight.float() if HAS_WEIGHT else None
    w_y = w[y] if HAS_WEIGHT else torch.ones_like(lse)
    loss = (lse - x_y) * w_y
    eps = label_smoothing / v
    if label_smoothing > 0:
        smooth = (-eps * (x * w if HAS_WEIGHT else x)).sum(-1)
        smooth = smooth + (eps * w.sum() * lse if HAS_WEIGHT else label_smoothing * lse)
        loss = loss * (1.0 - label_smoothing) + smooth
    z = lse_square_scale * lse * lse
    inv_n = 1.0 / n_keep
    if REDUCTION_MEAN:
        loss = loss / w[y[keep]].sum() if HAS_WEIGHT else loss * inv_n
        z = z * inv_n
    return x, raw, y, keep, lse, w, w_y, loss + z, z, eps, inv_n


def reference(logits, target, weight, *, label_smoothing, lse_square_scale, HAS_GRADIENTS,
              REDUCTION_MEAN, HAS_WEIGHT, HAS_SOFTCAPPING, RETURN_Z_LOSS, RETURN_TOKEN_ACCURACY,
              RETURN_PREDICTED_TOKENS):
    """(grads (n_rows, n_cols) in the logits' dtype: the gradient, or the logits unchanged
    without HAS_GRADIENTS; loss (n_rows,) in that dtype; z_loss (that dtype); token_accuracy
    (f32); predicted_tokens (int64)), each optional output a 1-element buffer left as
    initialised when it is not returned."""
    x, raw, y, keep, lse, w, w_y, loss, z, eps, inv_n = _rows(
        logits, target, weight, label_smoothing, lse_square_scale, HAS_WEIGHT, HAS_SOFTCAPPING,
        REDUCTION_MEAN)
    dt = logits.dtype
    n = x.shape[0]
    grads = logits.clone()
    if HAS_GRADIENTS:
        sm = torch.softmax(x, dim=-1)
        onehot = torch.zeros_like(sm).scatter_(1, y[:, None], 1.0)
        if not HAS_WEIGHT:
            g = sm + 2.0 * lse_square_scale * lse[:, None] * sm - eps - (1.0 - label_smoothing) * onehot
            if REDUCTION_MEAN:
                g = g * inv_n
        else:
            d_ori = ((1.0 - label_smoothing) * sm - (1.0 - label_smoothing) * onehot) * w_y[:, None]
            d_smooth = eps * (sm * w.sum() - w[None, :])
            d_z = 2.0 * lse_square_scale * lse[:, None] * sm
            if REDUCTION_MEAN:
                inv_w = 1.0 / w[y[keep]].sum()
                d_ori, d_smooth, d_z = d_ori * inv_w, d_smooth * inv_w, d_z * inv_n
            g = d_ori + d_smooth + d_z
        if HAS_SOFTCAPPING:
            g = g * (1.0 - torch.tanh(raw / SOFTCAP) ** 2)
        grads = torch.where(keep[:, None], g, 0.0).to(dt)
    loss_out = torch.where(keep, loss, 0.0).to(dt)
    z_out = torch.where(keep, z, 0.0).to(dt) if RETURN_Z_LOSS else torch.zeros(1, dtype=dt, device=x.device)
    am = torch.argmax(x, dim=-1)        # the first maximum, as the kernel's min over tied columns
    acc = (torch.where(keep, (am == y).float(), 0.0) if RETURN_TOKEN_ACCURACY
           else torch.zeros(1, dtype=torch.float32, device=x.device))
    pred = (torch.where(keep, am, -1) if RETURN_PREDICTED_TOKENS
            else torch.full((1,), -1, dtype=torch.int64, device=x.device))
    del n
    return grads, loss_out, z_out, acc, pred


def torch_impl(logits, target, weight, *, label_smoothing, lse_square_scale, HAS_GRADIENTS,
               REDUCTION_MEAN, HAS_WEIGHT, HAS_SOFTCAPPING, RETURN_Z_LOSS, RETURN_TOKEN_ACCURACY,
               RETURN_PREDICTED_TOKENS):
    """The loss by torch's cross_entropy (fp32 logits) and its gradient by autograd (the
    benchmark's torch baseline: what a training step without the fused kernel runs)."""
    x = logits.float().requires_grad_(HAS_GRADIENTS == 1)
    xs = SOFTCAP * torch.tanh(x / SOFTCAP) if HAS_SOFTCAPPING else x
    loss = torch.nn.functional.cross_entropy(
        xs, target, weight=weight.float() if HAS_WEIGHT else None, ignore_index=IGNORE,
        label_smoothing=label_smoothing, reduction="mean" if REDUCTION_MEAN else "sum")
    if HAS_GRADIENTS:
        (g,) = torch.autograd.grad(loss, x)
        return g.to(logits.dtype), loss.detach()
    return logits, loss.detach()
