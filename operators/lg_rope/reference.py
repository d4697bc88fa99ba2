"""PyTorch semantics of Liger's RoPE (tilegym.suites.liger.cutile.rope), HuggingFace's half-split
form: with r, i the halves of a head and c, s the first halves of the token's cos / sin rows,
r' = r c - i s sign and i' = i c + r s sign (sign 1 forward, -1 backward)."""
import torch


def _rotate(r, i, c, s, sin_sign, dtype):
    s = s * sin_sign
    return (r * c - i * s).to(dtype), (i * c + r * s).to(dtype)


def _rope_heads(x, c, s, sin_sign):
    """x (B, H, S, D) rotated by c, s (1, 1, S, D / 2): fp32 math rounded to x's dtype."""
    h = x.shape[-1] // 2
    xf = x.float()
    r, i = _rotate(xf[..., :h], xf[..., h:], c, s, sin_sign, x.dtype)
    return torch.cat((r, i), dim=-1)


def rope_4d_reference(q, k, cos, sin, *, sin_sign):
    """(q', k') of q (B, HQ, S, D), k (B, HK, S, D), cos / sin (1, S, D) (only the first D / 2
    entries of a row are read), in q's dtype."""
    h = q.shape[-1] // 2
    c = cos[..., :h].float()[:, None]
    s = sin[..., :h].float()[:, None]
    return _rope_heads(q, c, s, sin_sign), _rope_heads(k, c, s, sin_sign)


def _rope_5d(x, c, s, sin_sign):
    """x (B, S, H, 2, D / 2) rotated by c, s (1, S, 1, D / 2): fp32 math rounded to x's dtype."""
    xf = x.float()
    r, i = _rotate(xf[:, :, :, 0], xf[:, :, :, 1], c, s, sin_sign, x.dtype)
    return torch.stack((r, i), dim=3)


def rope_5d_reference(q5, k5, cos4, sin4, *, sin_sign):
    """(q', k') of q5 (B, S, HQ, 2, D / 2), k5 (B, S, HK, 2, D / 2) and cos4 / sin4
    (1, S, 1, D / 2), the 5-D path's layout, in q5's dtype."""
    c, s = cos4.float(), sin4.float()
    return _rope_5d(q5, c, s, sin_sign), _rope_5d(k5, c, s, sin_sign)


def rope_4d_torch(q, k, cos, sin, *, sin_sign):
    """HuggingFace's apply_rotary_pos_emb in the native dtype (ATen), out of place."""
    c, s = cos[:, None], sin[:, None] * sin_sign

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s


def rope_5d_torch(q5, k5, cos4, sin4, *, sin_sign):
    """The same rotation in the native dtype on the 5-D layout (ATen), out of place."""
    s = sin4 * sin_sign

    def rot(x):
        r, i = x[:, :, :, 0], x[:, :, :, 1]
        return torch.stack((r * cos4 - i * s, i * cos4 + r * s), dim=3)

    return rot(q5), rot(k5)
