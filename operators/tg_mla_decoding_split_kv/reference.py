"""PyTorch semantics of TileGym's split-KV absorbed-MLA decode attention, stage 1
(tilegym.ops.cutile.mla_decoding_split_kv._naive_absorb_mla_transpose_kernel): the partial
results that splitk_reduce merges, not the merged output.

Q (B, H, D), QPE (B, H, DPE), kv (B, S, D) = keys and values, KPE (B, S, DPE). Split i covers
keys [i P, min(S, (i + 1) P)), P = KV_LEN_PER_SPLIT; s = sm_scale (q kv^T + qpe KPE^T).
Att_Out[:, :, i, :] = softmax(s) kv over the split (Q's dtype), LSE_Out[:, :, i] =
log2(sum exp(s)) over the split (f32).
"""
import math

import torch
import torch.nn.functional as F


def split_partials(Q, QPE, kv, KPE, P, n_splits, scale, dtype):
    S = kv.shape[1]
    s = (torch.matmul(Q.to(dtype), kv.to(dtype).transpose(-1, -2)).float()
         + torch.matmul(QPE.to(dtype), KPE.to(dtype).transpose(-1, -2)).float()) * scale   # (B, H, S)
    pad = n_splits * P - S
    s = F.pad(s, (0, pad), value=float("-inf")).unflatten(-1, (n_splits, P))               # (B, H, n, P)
    v = F.pad(kv.to(dtype), (0, 0, 0, pad)).unflatten(1, (n_splits, P))                    # (B, n, P, D)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).to(dtype)
    out = torch.einsum("bhnp,bnpd->bhnd", p, v).float()
    return out, lse / math.log(2)


def reference(Q, QPE, kv, KPE, *, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, sm_scale):
    """(Att_Out (B, H, NUM_KV_SPLITS, D) in Q's dtype, LSE_Out (B, H, NUM_KV_SPLITS) f32)."""
    out, lse = split_partials(Q, QPE, kv, KPE, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, sm_scale, torch.float32)
    return out.to(Q.dtype), lse


def torch_impl(Q, QPE, kv, KPE, *, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, sm_scale):
    """The same partials with cuBLAS matmuls in the input dtype."""
    out, lse = split_partials(Q, QPE, kv, KPE, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, sm_scale, Q.dtype)
    return out.to(Q.dtype), lse
