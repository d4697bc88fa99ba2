"""PyTorch semantics of TileGym's attention with sink tokens (tilegym.ops.cutile.attention_sink).

Q (B, H, SQ, D), K and V (B, HKV, SK, D) with H = HKV * G (query head h reads key/value head
h // G), Sinks (H,) one logit per query head, Start_q (1,) int32: the absolute position of query
0. Query i at position p = start_q + i sees key n when n <= p and, with a sliding window
(BANDWIDTH > 0), n > p - BANDWIDTH. The sink logit joins each row's softmax and is dropped
afterwards: out = sum_n exp(s_n) v_n / (sum_n exp(s_n) + exp(sink_h)), s = qk_scale * q.k.
"""
import torch


def _masked_scores(Q, K, Start_q, BANDWIDTH, qk_scale, dtype):
    B, H, SQ, D = Q.shape
    G = H // K.shape[1]
    k = K.to(dtype).repeat_interleave(G, dim=1)
    s = torch.matmul(Q.to(dtype), k.transpose(-1, -2)).float() * qk_scale
    pos = Start_q.long()[0] + torch.arange(SQ, device=Q.device)
    n = torch.arange(K.shape[2], device=Q.device)
    visible = n[None, :] <= pos[:, None]
    if BANDWIDTH > 0:
        visible &= n[None, :] > pos[:, None] - BANDWIDTH
    return s.masked_fill(~visible, float("-inf"))


def _with_sinks(s, Sinks):
    B, H, SQ, _ = s.shape
    sink = Sinks.float().view(1, H, 1, 1).expand(B, H, SQ, 1)
    return torch.softmax(torch.cat([s, sink], dim=-1), dim=-1)[..., :-1]


def reference(Q, K, V, Sinks, Start_q, *, BANDWIDTH, qk_scale):
    """Out (B, H, SQ, D) in Q's dtype, computed in fp32."""
    p = _with_sinks(_masked_scores(Q, K, Start_q, BANDWIDTH, qk_scale, torch.float32), Sinks)
    v = V.float().repeat_interleave(Q.shape[1] // V.shape[1], dim=1)
    return torch.matmul(p, v).to(Q.dtype)


def torch_impl(Q, K, V, Sinks, Start_q, *, BANDWIDTH, qk_scale):
    """The same in PyTorch's native dtype (cuBLAS matmuls in Q's dtype, softmax in fp32): SDPA
    cannot add a sink column to the denominator."""
    p = _with_sinks(_masked_scores(Q, K, Start_q, BANDWIDTH, qk_scale, Q.dtype), Sinks)
    v = V.repeat_interleave(Q.shape[1] // V.shape[1], dim=1)
    return torch.matmul(p.to(Q.dtype), v)
