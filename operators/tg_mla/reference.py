"""PyTorch semantics of TileGym's MLA prefill attention (tilegym.ops.cutile.mla._prefill_mla_kernel).

Q (B, H, S, D), QPE (B, H, S, DPE), K/V (B, HKV, S, D), KPE (B, 1, S, DPE); query head h reads KV
head h // (H // HKV). Causal: s = qk_scale (q.k + qpe.kpe) over keys n <= m; out = softmax(s) V.
"""
import torch
import torch.nn.functional as F


def reference(Q, QPE, K, KPE, V, *, qk_scale):
    """Out (B, H, S, D) in Q's dtype, computed in fp32."""
    H, S = Q.shape[1], Q.shape[2]
    k = K.float().repeat_interleave(H // K.shape[1], dim=1)
    v = V.float().repeat_interleave(H // V.shape[1], dim=1)
    s = (torch.matmul(Q.float(), k.transpose(-1, -2)) + torch.matmul(QPE.float(), KPE.float().transpose(-1, -2)))
    keep = torch.ones(S, S, dtype=torch.bool, device=Q.device).tril()
    p = torch.softmax((s * qk_scale).masked_fill(~keep, float("-inf")), dim=-1)
    return torch.matmul(p, v).to(Q.dtype)


def torch_impl(Q, QPE, K, KPE, V, *, qk_scale):
    """PyTorch's fused causal attention on [q, qpe] . [k, kpe] (one query/key of width D + DPE)."""
    H, HKV = Q.shape[1], K.shape[1]
    q = torch.cat([Q, QPE], dim=-1)
    k = torch.cat([K, KPE.expand(-1, HKV, -1, -1)], dim=-1)
    v = F.pad(V, (0, QPE.shape[-1]))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=qk_scale, enable_gqa=HKV != H)
    return out[..., :Q.shape[-1]]
