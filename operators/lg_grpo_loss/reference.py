"""PyTorch semantics of Liger's GRPO loss (tilegym.suites.liger.cutile.grpo_loss), loss_type 0
with the KL penalty, temperature 1, eps_low = eps_high = 0.2, no dual clip (delta 0), no vLLM
ratio: per completion token (b, l) of logits (B (L + 1), N) (row b (L + 1) + l), in fp32,
lse = logsumexp(logits / T), logp = logits_id / T - lse, coef_1 = exp(logp - old_logp), loss
-min(coef_1 A_b, clip(coef_1) A_b) + beta (exp(ref - logp) - (ref - logp) - 1); the backward's
dlogits = ([j == id] - exp(logits / T - lse)) dlogp dloss / T. Masked tokens are skipped
(their outputs keep their zero fill; the backward writes zeros)."""
import torch

T, EPS_LOW, EPS_HIGH = 1.0, 0.2, 0.2


def completion_ids(logits, *, B, L):
    """(B, L) int64 token ids spread over the vocabulary."""
    n = logits.shape[-1]
    i = torch.arange(B * L, device=logits.device, dtype=torch.int64)
    return ((i * 7919 + 13) % n).view(B, L)


def _token_logp(logits, ids, B, L):
    x = logits.float().view(B, L + 1, -1)[:, :L, :] / T
    lse = torch.logsumexp(x, dim=-1)
    return x.gather(2, ids[..., None])[..., 0] - lse, lse, x


def _wave(B, L, device, phase):
    i = torch.arange(B * L, device=device, dtype=torch.float32).view(B, L)
    return torch.sin(0.37 * i + phase)


def old_logps(logits, input_ids, *rest, B, L):
    """(B, L) f32: logp moved by up to 0.3 (importance ratios in [0.74, 1.35]: some clipped)."""
    return _token_logp(logits, input_ids, B, L)[0] + 0.3 * _wave(B, L, logits.device, 0.0)


def ref_logps(logits, input_ids, *rest, B, L):
    """(B, L) f32: logp moved by up to 0.2 (a KL of a few 1e-2)."""
    return _token_logp(logits, input_ids, B, L)[0] + 0.2 * _wave(B, L, logits.device, 1.0)


def completion_masks(logits, input_ids, *rest, B, L):
    """(B, L) int32: 1, but the last b % 3 tokens of sequence b (right padding)."""
    pos = torch.arange(L, device=logits.device)[None, :]
    pad = (torch.arange(B, device=logits.device) % 3)[:, None]
    return (pos < L - pad).to(torch.int32)


def token_lse(logits, *rest, B, L):
    """(B, L) f32: the forward's cached logsumexp."""
    return torch.logsumexp(logits.float().view(B, L + 1, -1)[:, :L, :] / T, dim=-1)


def seq_token_lse(logits, *rest, B, L):
    return token_lse(logits, B=B, L=L)


def same_coef(logits, input_ids, ref_logp, completion_mask, advantages, coef_1):
    """The per-sequence ratio before the delta clamp: the same (delta 0)."""
    return coef_1.clone()


def clipped_coef(logits, input_ids, ref_logp, completion_mask, advantages, coef_1, coef_1_raw):
    return coef_1.clamp(1.0 - EPS_LOW, 1.0 + EPS_HIGH)


def seq_clipped(logits, input_ids, ref_logp, completion_mask, advantages, coef_1, coef_1_raw, coef_2):
    low = (coef_1 < 1.0 - EPS_LOW) & (advantages < 0)
    high = (coef_1 > 1.0 + EPS_HIGH) & (advantages > 0)
    return (low | high).float()


def seq_lengths(logits, input_ids, ref_logp, completion_mask, advantages, lse, coef_1):
    """(B,) f32 valid tokens per sequence."""
    return completion_mask.sum(1).float()


def dloss_sums(logits, input_ids, ref_logp, completion_mask, advantages, lse, coef_1, seq_len, dloss):
    """(B,) f32: the per-sequence sum of the upstream gradient over valid tokens."""
    return (dloss * completion_mask).sum(1)


def _kl(ref, logp):
    return torch.exp(ref - logp) - (ref - logp) - 1.0


def forward_reference(logits, input_ids, old_logp, ref_logp, completion_mask, advantages, dummy, *,
                      B, L, beta, HAS_OLD_LOGP):
    """(loss, lse, kl, is_clipped), each (B, L) f32, 0 at masked tokens."""
    logp, lse, _ = _token_logp(logits, input_ids, B, L)
    coef_1 = torch.exp(logp - (old_logp if HAS_OLD_LOGP else logp))
    a = advantages[:, None]
    coef_2 = coef_1.clamp(1.0 - EPS_LOW, 1.0 + EPS_HIGH)
    clipped = (((coef_1 < 1.0 - EPS_LOW) & (a < 0)).float() + ((coef_1 > 1.0 + EPS_HIGH) & (a > 0)).float())
    kl = _kl(ref_logp, logp)
    loss = -torch.minimum(coef_1 * a, coef_2 * a) + beta * kl
    keep = completion_mask != 0
    return tuple(torch.where(keep, v, 0.0) for v in (loss, lse, kl, clipped.clamp(max=1.0)))


def forward_torch(logits, input_ids, old_logp, ref_logp, completion_mask, advantages, dummy, *,
                  B, L, beta, HAS_OLD_LOGP):
    """The same with torch's log_softmax (what a GRPO trainer computes without the kernel)."""
    x = logits.float().view(B, L + 1, -1)[:, :L, :] / T
    logp = torch.log_softmax(x, dim=-1).gather(2, input_ids[..., None])[..., 0]
    coef_1 = torch.exp(logp - old_logp) if HAS_OLD_LOGP else torch.ones_like(logp)
    a = advantages[:, None]
    loss = -torch.minimum(coef_1 * a, coef_1.clamp(1.0 - EPS_LOW, 1.0 + EPS_HIGH) * a) + beta * _kl(ref_logp, logp)
    return loss * completion_mask, torch.logsumexp(x, dim=-1)


def _dlogits(logits, input_ids, lse, dlogp, completion_mask, B, L):
    x = logits.float().view(B, L + 1, -1)[:, :L, :] / T
    g = -torch.exp(x - lse[..., None])
    g = g.scatter_add(2, input_ids[..., None], torch.ones_like(g[..., :1]))
    g = torch.where(completion_mask[..., None] != 0, g * (dlogp / T)[..., None], 0.0)
    out = torch.zeros(B, L + 1, x.shape[-1], device=x.device, dtype=torch.float32)
    out[:, :L, :] = g
    return out.view(B * (L + 1), -1).to(logits.dtype)


def backward_reference(logits, input_ids, old_logp, ref_logp, completion_mask, advantages, lse, dloss,
                       dummy, *, B, L, beta, HAS_OLD_LOGP):
    """dlogits (B (L + 1), N) in the logits' dtype; each sequence's last row 0."""
    x = logits.float().view(B, L + 1, -1)[:, :L, :] / T
    logp = x.gather(2, input_ids[..., None])[..., 0] - lse
    coef_1 = torch.exp(logp - (old_logp if HAS_OLD_LOGP else logp))
    a = advantages[:, None]
    coef_2 = coef_1.clamp(1.0 - EPS_LOW, 1.0 + EPS_HIGH)
    unclipped = (coef_2 * a >= coef_1 * a).float()
    dlogp = -coef_1 * a * unclipped + beta * (1.0 - torch.exp(ref_logp - logp))
    return _dlogits(logits, input_ids, lse, dlogp * dloss, completion_mask, B, L)


def backward_torch(logits, input_ids, old_logp, ref_logp, completion_mask, advantages, lse, dloss,
                   dummy, *, B, L, beta, HAS_OLD_LOGP):
    """The gradient by autograd through forward_torch's loss."""
    x = logits.float().requires_grad_(True)
    loss, _ = forward_torch(x, input_ids, old_logp, ref_logp, completion_mask, advantages, dummy,
                            B=B, L=L, beta=beta, HAS_OLD_LOGP=HAS_OLD_LOGP)
    (g,) = torch.autograd.grad(loss, x, dloss)
    return g.to(logits.dtype)


def seq_forward_reference(logits, input_ids, ref_logp, completion_mask, advantages, coef_1, coef_1_raw,
                          coef_2, is_clipped_seq, dummy, *, B, L, beta):
    """(loss, lse, kl, is_clipped) (B, L) f32 with the per-sequence coefficients given."""
    logp, lse, _ = _token_logp(logits, input_ids, B, L)
    a, c1, c2 = advantages[:, None], coef_1[:, None], coef_2[:, None]
    kl = _kl(ref_logp, logp)
    loss = (-torch.minimum(c1 * a, c2 * a)).expand(B, L) + beta * kl
    keep = completion_mask != 0
    return tuple(torch.where(keep, v, 0.0) for v in (loss, lse, kl, is_clipped_seq[:, None].expand(B, L)))


def seq_backward_reference(logits, input_ids, ref_logp, completion_mask, advantages, lse, coef_1, seq_len,
                           dloss, dloss_sum, *, B, L, beta):
    """dlogits (B (L + 1), N): the sequence's policy gradient (coef_1 A / seq_len, unclipped
    sequences only) times its dloss sum, plus the token's KL gradient times its dloss."""
    x = logits.float().view(B, L + 1, -1)[:, :L, :] / T
    logp = x.gather(2, input_ids[..., None])[..., 0] - lse
    a, c1 = advantages[:, None], coef_1[:, None]
    c2 = c1.clamp(1.0 - EPS_LOW, 1.0 + EPS_HIGH)
    unclipped = (c2 * a >= c1 * a).float()
    dlogp = -c1 * a / seq_len[:, None] * unclipped * dloss_sum[:, None]
    dlogp = dlogp + beta * (1.0 - torch.exp(ref_logp - logp)) * dloss
    return _dlogits(logits, input_ids, lse, dlogp, completion_mask, B, L)
