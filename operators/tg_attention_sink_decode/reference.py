"""PyTorch semantics of TileGym's split-KV decode attention with sinks, stage 1
(tilegym.ops.cutile.attention_sink_decode._attention_sink_decode_kernel): the partial results
that splitk_reduce merges, not the merged output.

Q (B, HKV, G, D), K/V (B, HKV, S, D), Sinks (H,) (H = HKV * G), Start_q (1,) int32 = sq.
Split i (P = KV_LEN_PER_SPLIT keys, BLOCK_N = 128): start = i P, end = min(start + P, S, sq + 1);
with a window (BANDWIDTH > 0) start = max(start, sq - BANDWIDTH + 1); start is aligned down to
BLOCK_N. When end > start the split attends to the keys n in [start, start + P) with n < S,
n <= sq and n > sq - BANDWIDTH (the kernel walks P keys from the aligned start, so with a window
a split may reach into the next one: reproduced, not corrected); otherwise it attends to
nothing (m = -inf, the kernel's l = BLOCK_N). Split 0 adds exp(sink_h) to its denominator.
Att_Out[..., i, :] = sum_n exp(s_n) v_n / l (s = softmax_scale q.k) in Q's dtype,
LSE_Out[..., i] = log2(l) + m in base 2, rounded to Q's dtype as the kernel does.
"""
import math

import torch

BLOCK_N = 128


def split_partials(Q, K, V, Sinks, Start_q, P, n_splits, bandwidth, has_sinks, scale, dtype):
    B, HKV, G, D = Q.shape
    S = K.shape[2]
    sq = int(Start_q[0])
    s2 = torch.matmul(Q.to(dtype), K.to(dtype).transpose(-1, -2)).float() * (scale / math.log(2))
    sink2 = (Sinks.float().view(HKV, G) / math.log(2) if has_sinks
             else torch.full((HKV, G), float("-inf"), device=Q.device))
    outs, lses = [], []
    for i in range(n_splits):
        start, end = i * P, min(i * P + P, S, sq + 1)
        if bandwidth > 0:
            start = max(start, max(0, sq - (bandwidth - 1)))
        start = start // BLOCK_N * BLOCK_N
        n = torch.arange(start, start + P, device=Q.device)
        keep = (n < S) & (n <= sq)
        if bandwidth > 0:
            keep &= n >= sq + 1 - bandwidth
        n = n[keep] if end > start else n[:0]
        if len(n):
            sc = s2[..., n]
            m = sc.amax(-1)
            p = torch.exp2(sc - m[..., None])
            l = p.sum(-1)
            acc = torch.matmul(p.to(dtype), V[:, :, n].to(dtype)).float()
        else:
            m = torch.full((B, HKV, G), float("-inf"), device=Q.device)
            l = torch.full((B, HKV, G), float(BLOCK_N), device=Q.device)
            acc = torch.zeros(B, HKV, G, D, device=Q.device)
        if i == 0:
            m_new = torch.maximum(m, sink2)
            alpha = torch.exp2(m - m_new)
            l = l * alpha + torch.exp2(sink2 - m_new)
            acc = acc * alpha[..., None]
            m = m_new
        outs.append(acc / l[..., None])
        lses.append(m + torch.log2(l))
    return torch.stack(outs, dim=3), torch.stack(lses, dim=3)


def reference(Q, K, V, Sinks, Start_q, *, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, BANDWIDTH, HAS_SINKS, softmax_scale):
    """(Att_Out (B, HKV, G, NUM_KV_SPLITS, D) in Q's dtype, LSE_Out (B, HKV, G, NUM_KV_SPLITS)
    f32 holding Q-dtype values), computed in fp32."""
    out, lse = split_partials(Q, K, V, Sinks, Start_q, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, BANDWIDTH, HAS_SINKS,
                              softmax_scale, torch.float32)
    return out.to(Q.dtype), lse.to(Q.dtype).float()


def torch_impl(Q, K, V, Sinks, Start_q, *, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, BANDWIDTH, HAS_SINKS, softmax_scale):
    """The same partials with cuBLAS matmuls in the input dtype (no single torch op adds sinks)."""
    out, lse = split_partials(Q, K, V, Sinks, Start_q, KV_LEN_PER_SPLIT, NUM_KV_SPLITS, BANDWIDTH, HAS_SINKS,
                              softmax_scale, Q.dtype)
    return out.to(Q.dtype), lse.to(Q.dtype).float()
