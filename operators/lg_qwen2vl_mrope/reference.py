"""PyTorch semantics of Liger's Qwen2-VL M-RoPE (tilegym.suites.liger.cutile.qwen2vl_mrope):
HuggingFace's half-split rotation where column j of a half takes the temporal cos / sin row
(j < t), the height row (t <= j < t + h) or the width row; r' = r c - i s sign,
i' = i c + r s sign in fp32, rounded to q's dtype."""
import torch


def _sections(table, t, h, half):
    """The (bsz, S, D / 2) rows of table (3, bsz, S, D), each column from its section."""
    col = torch.arange(half, device=table.device)
    sec = torch.where(col < t, 0, torch.where(col < t + h, 1, 2))
    return table[..., :half].float().gather(0, sec.expand(1, *table.shape[1:3], half))[0]


def _rotate(x, c, s):
    """x (..., D) by c, s broadcast to (..., D / 2): fp32 math rounded to x's dtype."""
    half = x.shape[-1] // 2
    xf = x.float()
    r, i = xf[..., :half], xf[..., half:]
    return torch.cat((r * c - i * s, i * c + r * s), dim=-1).to(x.dtype)


def mrope_4d_reference(q, k, cos, sin, *, MROPE_SECTION_T, MROPE_SECTION_H, sin_sign):
    """(q', k') of q (B, HQ, S, D), k (B, HK, S, D), cos / sin (3, B, S, D) fp32; q's dtype."""
    half = q.shape[-1] // 2
    c = _sections(cos, MROPE_SECTION_T, MROPE_SECTION_H, half)[:, None]      # (B, 1, S, D / 2)
    s = _sections(sin, MROPE_SECTION_T, MROPE_SECTION_H, half)[:, None] * sin_sign
    return _rotate(q, c, s), _rotate(k, c, s)


def mrope_flat_reference(q_t, k_t, cos, sin, *, MROPE_SECTION_T, MROPE_SECTION_H, BACKWARD):
    """(q', k') of the transposed q_t (B, S, HQ, D), k_t (B, S, HK, D); q_t's dtype."""
    half = q_t.shape[-1] // 2
    c = _sections(cos, MROPE_SECTION_T, MROPE_SECTION_H, half)[:, :, None]   # (B, S, 1, D / 2)
    s = _sections(sin, MROPE_SECTION_T, MROPE_SECTION_H, half)[:, :, None] * (-1.0 if BACKWARD else 1.0)
    return _rotate(q_t, c, s), _rotate(k_t, c, s)


def _hf_mrope(x, cos, sin, t, h, sign, head_axis):
    """HuggingFace's apply_multimodal_rotary_pos_emb (sections over the full cos / sin rows)
    with native-dtype ATen ops: x (..., D), cos / sin (3, B, S, D)."""
    sec = [t, h, x.shape[-1] // 2 - t - h] * 2
    c = torch.cat([m[i % 3] for i, m in enumerate(cos.split(sec, dim=-1))], dim=-1).unsqueeze(head_axis)
    s = torch.cat([m[i % 3] for i, m in enumerate(sin.split(sec, dim=-1))], dim=-1).unsqueeze(head_axis) * sign
    x1, x2 = x.chunk(2, dim=-1)
    return (x * c + torch.cat((-x2, x1), dim=-1) * s).to(x.dtype)


def mrope_4d_torch(q, k, cos, sin, *, MROPE_SECTION_T, MROPE_SECTION_H, sin_sign):
    """The torch baseline (out of place) on the 4-D layout."""
    return (_hf_mrope(q, cos, sin, MROPE_SECTION_T, MROPE_SECTION_H, sin_sign, 1),
            _hf_mrope(k, cos, sin, MROPE_SECTION_T, MROPE_SECTION_H, sin_sign, 1))


def mrope_flat_torch(q_t, k_t, cos, sin, *, MROPE_SECTION_T, MROPE_SECTION_H, BACKWARD):
    """The torch baseline (out of place) on the transposed layout."""
    sign = -1.0 if BACKWARD else 1.0
    return (_hf_mrope(q_t, cos, sin, MROPE_SECTION_T, MROPE_SECTION_H, sign, 2),
            _hf_mrope(k_t, cos, sin, MROPE_SECTION_T, MROPE_SECTION_H, sign, 2))
