"""PyTorch semantics of Liger's Llama 4 RoPE (tilegym.suites.liger.cutile.llama4_rope): each
head's interleaved pairs (x[2j], x[2j + 1]), read as complex numbers, times the position's
frequency (f[2j] + i f[2j + 1]) in fp32, rounded to x's dtype (imag_sign 1: the forward)."""
import torch


def _rotate(x, freqs):
    """x (B, S, H, D) by freqs (S, D) fp32 (interleaved real / imaginary parts)."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    fc = torch.view_as_complex(freqs.float().reshape(freqs.shape[0], -1, 2).contiguous())
    return torch.view_as_real(xc * fc[None, :, None]).flatten(-2).to(x.dtype)


def reference(q, k, freqs):
    """(q', k') of q (B, S, HQ, D), k (B, S, HK, D), freqs (S, D) fp32, in q's dtype."""
    return _rotate(q, freqs), _rotate(k, freqs)


def torch_impl(q, k, freqs):
    """Llama 4's apply_rotary_emb with ATen ops (out of place): complex math in fp32, as
    HuggingFace's Llama 4 writes it."""
    return _rotate(q, freqs), _rotate(k, freqs)
