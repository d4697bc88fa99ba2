"""PyTorch semantics of Unsloth's RoPE (tilegym.suites.unsloth.cutile.rope_embedding),
HuggingFace's half-split form: with r, i the halves of a head and c, s the first halves of the
position's cos / sin rows (S, D), r' = r c - i s and i' = i c + r s, s negated in the backward."""
import torch


def _rotate(x, c, s):
    """x (..., D) rotated by c, s broadcast to (..., D / 2): fp32 math rounded to x's dtype."""
    h = x.shape[-1] // 2
    xf = x.float()
    r, i = xf[..., :h], xf[..., h:]
    return torch.cat((r * c - i * s, i * c + r * s), dim=-1).to(x.dtype)


def rope_qk_reference(q, k, cos, sin, rope_indices, *, BACKWARD_PASS, HAS_ROPE_INDICES):
    """(q', k') of q (B, HQ, S, D), k (B, HK, S, D) with cos / sin (S, D) at position s, or at
    rope_indices[b * S + s] (int32, B * S) where HAS_ROPE_INDICES; in q's dtype."""
    b, _, n, d = q.shape
    h = d // 2
    pos = rope_indices.long().view(b, n) if HAS_ROPE_INDICES else torch.arange(n, device=q.device).expand(b, n)
    c = cos[pos][..., :h].float()[:, None]                  # (B, 1, S, D / 2)
    s = sin[pos][..., :h].float()[:, None] * (-1.0 if BACKWARD_PASS else 1.0)
    return _rotate(q, c, s), _rotate(k, c, s)


def rope_reference(q, cos, sin, *, BACKWARD_PASS):
    """q' of q (B, S, H, D) with cos / sin (S, D) at position s; in q's dtype."""
    h = q.shape[-1] // 2
    n = q.shape[1]
    c = cos[:n, :h].float()[None, :, None]                  # (1, S, 1, D / 2)
    s = sin[:n, :h].float()[None, :, None] * (-1.0 if BACKWARD_PASS else 1.0)
    return _rotate(q, c, s)


def _rotate_native(x, c, s):
    h = x.shape[-1] // 2
    r, i = x[..., :h], x[..., h:]
    return torch.cat((r * c - i * s, i * c + r * s), dim=-1)


def rope_qk_torch(q, k, cos, sin, rope_indices, *, BACKWARD_PASS, HAS_ROPE_INDICES):
    """The same rotation with native-dtype ATen ops, out of place (the torch baseline)."""
    b, _, n, d = q.shape
    h = d // 2
    pos = rope_indices.long().view(b, n) if HAS_ROPE_INDICES else torch.arange(n, device=q.device).expand(b, n)
    c = cos[pos][..., :h][:, None]
    s = sin[pos][..., :h][:, None] * (-1.0 if BACKWARD_PASS else 1.0)
    return _rotate_native(q, c, s), _rotate_native(k, c, s)


def rope_torch(q, cos, sin, *, BACKWARD_PASS):
    """The same rotation with native-dtype ATen ops, out of place (the torch baseline)."""
    h = q.shape[-1] // 2
    n = q.shape[1]
    return _rotate_native(q, cos[:n, :h][None, :, None], sin[:n, :h][None, :, None] * (-1.0 if BACKWARD_PASS else 1.0))
