"""PyTorch semantics of TileGym's RoPE (tilegym.ops.cutile.rope), HuggingFace Llama's form:
with x1, x2 the two halves of each head's first rope_dim = 2 * h entries and c, s the first h
entries of the (1, S, rope_dim) cos/sin rows, x1' = x1 c - x2 s and x2' = x2 c + x1 s; the
remaining head entries pass through. The kernel reads only the first half of the cos/sin rows
(HF rows repeat it), and so does this reference."""
import torch


def _rotate(x: torch.Tensor, c: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    h = c.shape[-1]
    xf = x.float()
    x1, x2 = xf[..., :h], xf[..., h:2 * h]
    out = xf.clone()
    out[..., :h] = x1 * c - x2 * s
    out[..., h:2 * h] = x2 * c + x1 * s
    return out.to(x.dtype)


def reference(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """(q', k') of q (B, HQ, S, D), k (B, HK, S, D) rotated by cos, sin (1, S, D): fp32 math
    rounded to q's dtype."""
    h = cos.shape[-1] // 2
    c = cos[..., :h].float()[:, None]                       # (1, 1, S, h): over batch and heads
    s = sin[..., :h].float()[:, None]
    return _rotate(q, c, s), _rotate(k, c, s)


def torch_impl(q, k, cos, sin):
    """HuggingFace's apply_rotary_pos_emb in the native dtype (ATen), the "is either port worth
    using over torch?" baseline the benchmark times next to both kernels (out of place; it reads
    the full cos/sin rows)."""
    c, s = cos[:, None], sin[:, None]

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s
