"""PyTorch semantics of FlashInfer's MLA RoPE + FP8 quantisation
(tilegym.suites.flashinfer.cutile.rope_quantize_fp8): interleaved RoPE on the rope parts
((x[2i], x[2i+1]) rotated by cos_sin_cache[pos, i], cos_sin_cache[pos, D/2 + i]), every part
scaled (q by quant_scale_q, k by quant_scale_kv) and rounded to float8_e4m3fn."""
import torch

FP8 = torch.float8_e4m3fn


def _rope(x, cos, sin, scale):
    """x (..., D) -> the interleaved rotation in fp32, scaled, as e4m3; cos / sin broadcast over
    x's middle axes."""
    xf = x.float()
    even, odd = xf[..., 0::2], xf[..., 1::2]
    out = torch.empty_like(xf)
    out[..., 0::2] = (even * cos - odd * sin) * scale
    out[..., 1::2] = (odd * cos + even * sin) * scale
    return out.to(FP8)


def reference(q_rope, k_rope, q_nope, k_nope, cos_sin_cache, pos_ids, *, quant_scale_q, quant_scale_kv):
    """q_rope (T, H, R), k_rope (T, R), q_nope (T, H, N), k_nope (T, N) f16 / bf16;
    cos_sin_cache (max_pos, R) fp32, pos_ids (T,) int32 -> the four parts as float8_e4m3fn."""
    half = q_rope.shape[-1] // 2
    cs = cos_sin_cache[pos_ids.long()]
    cos, sin = cs[:, :half], cs[:, half:]
    return (_rope(q_rope, cos[:, None, :], sin[:, None, :], quant_scale_q),
            _rope(k_rope, cos, sin, quant_scale_kv),
            (q_nope.float() * quant_scale_q).to(FP8),
            (k_nope.float() * quant_scale_kv).to(FP8))


def torch_impl(q_rope, k_rope, q_nope, k_nope, cos_sin_cache, pos_ids, *, quant_scale_q, quant_scale_kv):
    """The same eager PyTorch steps (no fused op in torch)."""
    return reference(q_rope, k_rope, q_nope, k_nope, cos_sin_cache, pos_ids,
                     quant_scale_q=quant_scale_q, quant_scale_kv=quant_scale_kv)
