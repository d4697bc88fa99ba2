"""PyTorch semantics of TileGym's Gemma split-KV decode attention, stage 1
(tilegym.ops.cutile.gemma_attention_decode._gemma_attention_decode_kernel_grouped): the partial
results that splitk_reduce merges, not the merged output.

Q (B, HKV, G, D), K/V (B, HKV, S, D); the query sits at position S - 1. Score s = softmax_scale
q.k, soft-capped to SOFT_CAP tanh(s / SOFT_CAP) when HAS_SOFT_CAP. A key is masked when
n >= S or, with a window, n < S - 1 - WINDOW_SIZE; like the kernel, a masked score is the
finite -1e6 (in the units of s with a soft cap, of q.k without), so a split lying wholly outside
the window averages its values with equal weights and reports that huge negative LSE, which
splitk_reduce then weighs as 0. Split i covers keys [i P, (i + 1) P), P = KV_LEN_PER_SPLIT.
Att_Out[..., i, :] = sum_n 2^(t_n - m) v_n / l with t = s / ln 2, m = max t, l = sum 2^(t - m);
LSE_Out[..., i] = m + log2(l), log2(l) rounded to Q's dtype as the kernel does.
"""
import math

import torch

MASKED = -1.0e6


def split_partials(Q, K, V, P, n_splits, window, soft_cap, has_soft_cap, scale, dtype):
    B, HKV, G, D = Q.shape
    S = K.shape[2]
    qk = torch.matmul(Q.to(dtype), K.to(dtype).transpose(-1, -2)).float()            # (B, HKV, G, S)
    n = torch.arange(S, device=Q.device)
    masked = torch.zeros(S, dtype=torch.bool, device=Q.device)
    if window > 0:
        masked |= n < S - 1 - window
    if has_soft_cap:
        t = torch.tanh(qk * scale / soft_cap) * soft_cap
        t = t.masked_fill(masked, MASKED) / math.log(2)
    else:
        t = qk.masked_fill(masked, MASKED) * (scale / math.log(2))
    pad = n_splits * P - S                    # keys past S: weight 0 (no split lies wholly there)
    t = torch.nn.functional.pad(t, (0, pad), value=float("-inf")).unflatten(-1, (n_splits, P))
    v = torch.nn.functional.pad(V.to(dtype), (0, 0, 0, pad)).unflatten(2, (n_splits, P))
    m = t.amax(-1)
    p = torch.exp2(t - m[..., None])
    l = p.sum(-1)
    out = torch.einsum("bhgnp,bhnpd->bhgnd", p.to(dtype), v).float() / l[..., None]
    return out, m + torch.log2(l).to(Q.dtype).float()


def reference(Q, K, V, *, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP, softmax_scale):
    """(Att_Out (B, HKV, G, NUM_KV_SPLITS, D) in Q's dtype, LSE_Out (B, HKV, G, NUM_KV_SPLITS) f32)."""
    out, lse = split_partials(Q, K, V, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP,
                              softmax_scale, torch.float32)
    return out.to(Q.dtype), lse


def torch_impl(Q, K, V, *, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP, softmax_scale):
    """The same partials with cuBLAS matmuls in the input dtype (SDPA cannot soft-cap)."""
    out, lse = split_partials(Q, K, V, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, WINDOW_SIZE, SOFT_CAP, HAS_SOFT_CAP,
                              softmax_scale, Q.dtype)
    return out.to(Q.dtype), lse
