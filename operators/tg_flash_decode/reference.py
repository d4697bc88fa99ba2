"""PyTorch semantics of TileGym's split-KV decode attention, stage 1
(tilegym.ops.cutile.flash_decode._attention_decode_kernel_grouped): the partial results that
splitk_reduce merges, not the merged output.

Q (B, HKV, G, D): one query per head, grouped by KV head; K, V (B, HKV, S, D). Split i covers
keys [i * P, min(S, (i + 1) * P)), P = KV_LEN_PER_SPLIT. Per split: Att_Out[..., i, :] =
softmax(s) V over its keys (s = softmax_scale q.k), in Q's dtype, and LSE_Out[..., i] =
log2(sum exp(s)) in f32 (base 2, as splitk_reduce expects).
"""
import math

import torch


def split_partials(Q, K, V, P, n_splits, scale, dtype=torch.float32):
    """(partial outputs (B, HKV, G, n_splits, D) in fp32, LSE (B, HKV, G, n_splits), base 2)."""
    B, HKV, S, D = K.shape
    s = torch.matmul(Q.to(dtype), K.to(dtype).transpose(-1, -2)).float() * scale      # (B, HKV, G, S)
    pad = n_splits * P - S
    s = torch.nn.functional.pad(s, (0, pad), value=float("-inf")).unflatten(-1, (n_splits, P))
    v = torch.nn.functional.pad(V.to(dtype), (0, 0, 0, pad)).unflatten(2, (n_splits, P))  # (B, HKV, n, P, D)
    lse = torch.logsumexp(s, dim=-1)                                                  # (B, HKV, G, n)
    p = torch.exp(s - lse[..., None]).to(dtype)
    out = torch.einsum("bhgnp,bhnpd->bhgnd", p, v).float()
    return out, lse / math.log(2)


def reference(Q, K, V, *, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, softmax_scale):
    """(Att_Out in Q's dtype, LSE_Out f32), computed in fp32."""
    out, lse = split_partials(Q, K, V, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, softmax_scale)
    return out.to(Q.dtype), lse


def torch_impl(Q, K, V, *, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, softmax_scale):
    """The same partials with cuBLAS matmuls in the input dtype."""
    out, lse = split_partials(Q, K, V, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, softmax_scale, Q.dtype)
    return out.to(Q.dtype), lse
