"""PyTorch semantics of TileGym's sparse MLA prefill
(tilegym.ops.cutile.experimental.sparse_mla._sparse_mla_fwd_kernel).

Q (B, H, S, D), K/V (B, HKV, SKV, D), Indices (B, S, HKV, TOPK) int32, QPE (B, H, S, DPE),
KPE (B, 1, SKV, DPE). Query s of head h (KV head g = h // (H // HKV)) attends to the TOPK gathered
keys j = Indices[b, s, g, t] (repeats count each time) with j <= s: score qk_scale (q.k_j +
qpe.kpe_j), out = softmax(scores) v over them; a row with no such index is NaN (0 / 0), as in
the kernel.
"""
import torch


def _attend(Q, K, V, Indices, QPE, KPE, qk_scale, dtype):
    B, H, S, D = Q.shape
    HKV, TOPK = K.shape[1], Indices.shape[-1]
    G = H // HKV
    idx = Indices.long().permute(0, 2, 1, 3)                                      # (B, HKV, S, TOPK)
    bi = torch.arange(B, device=Q.device)[:, None, None, None]
    hi = torch.arange(HKV, device=Q.device)[None, :, None, None]
    k, v = K.to(dtype)[bi, hi, idx], V.to(dtype)[bi, hi, idx]                      # (B, HKV, S, TOPK, D)
    kpe = KPE.to(dtype)[bi, 0, idx]                                                # (B, HKV, S, TOPK, DPE)
    q = Q.to(dtype).view(B, HKV, G, S, D)
    qpe = QPE.to(dtype).view(B, HKV, G, S, -1)
    s = (torch.einsum("bgrsd,bgstd->bgrst", q, k).float()
         + torch.einsum("bgrsd,bgstd->bgrst", qpe, kpe).float()) * qk_scale        # (B, HKV, G, S, TOPK)
    pos = torch.arange(S, device=Q.device)[None, None, None, :, None]
    s = s.masked_fill(idx[:, :, None] > pos, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.einsum("bgrst,bgstd->bgrsd", p.to(dtype), v).float().reshape(B, H, S, D)


def reference(Q, K, V, Indices, QPE, KPE, *, qk_scale):
    """Out (B, H, S, D) in Q's dtype, computed in fp32."""
    return _attend(Q, K, V, Indices, QPE, KPE, qk_scale, torch.float32).to(Q.dtype)


def torch_impl(Q, K, V, Indices, QPE, KPE, *, qk_scale):
    """Advanced-indexing gathers and einsums in the input dtype (no single torch op)."""
    return _attend(Q, K, V, Indices, QPE, KPE, qk_scale, Q.dtype).to(Q.dtype)
