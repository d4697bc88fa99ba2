"""PyTorch semantics of TileGym's Gemma attention (tilegym.ops.cutile.gemma_attention._gemma_fmha_kernel).

Q (B, H, S, D), K/V (B, HKV, S, D), query head h reading KV head h // (H // HKV). Scores
s = sm_scale q.k, soft-capped to SOFT_CAP tanh(s / SOFT_CAP) when HAS_SOFT_CAP; query m sees
key n when n <= m (causal, STAGE 3) and |n - m| <= WINDOW_SIZE (window > 0); out = softmax(s) V.
"""
import torch


def _probs(Q, K, STAGE, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP, sm_scale, dtype):
    H, S = Q.shape[1], Q.shape[2]
    k = K.to(dtype).repeat_interleave(H // K.shape[1], dim=1)
    s = torch.matmul(Q.to(dtype), k.transpose(-1, -2)).float() * sm_scale
    if HAS_SOFT_CAP:
        s = torch.tanh(s / SOFT_CAP) * SOFT_CAP
    m = torch.arange(S, device=Q.device)[:, None]
    n = torch.arange(K.shape[2], device=Q.device)[None, :]
    keep = torch.ones(S, K.shape[2], dtype=torch.bool, device=Q.device)
    if STAGE == 3:
        keep &= n <= m
    if WINDOW_SIZE > 0:
        keep &= (n - m).abs() <= WINDOW_SIZE
    return torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1)


def reference(Q, K, V, *, STAGE, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP, sm_scale):
    """Out (B, H, S, D) in Q's dtype, computed in fp32."""
    p = _probs(Q, K, STAGE, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP, sm_scale, torch.float32)
    return torch.matmul(p, V.float().repeat_interleave(Q.shape[1] // V.shape[1], dim=1)).to(Q.dtype)


def torch_impl(Q, K, V, *, STAGE, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP, sm_scale):
    """cuBLAS matmuls in the input dtype, softmax in fp32 (SDPA cannot soft-cap)."""
    p = _probs(Q, K, STAGE, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP, sm_scale, Q.dtype)
    return torch.matmul(p.to(Q.dtype), V.repeat_interleave(Q.shape[1] // V.shape[1], dim=1))
