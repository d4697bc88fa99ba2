"""PyTorch semantics of TileGym's sliding-window attention prefill
(tilegym.ops.cutile.experimental.swa_attention._swa_fwd_kernel).

Q, K, V, Out are (B * H * S, D): each head's S rows in turn (KV heads already repeated for
GQA, S a whole number of tiles). Query m sees key n when m - window_size < n < seq_k and,
causal, n <= m; out = softmax(qk_scale q.k) V over those keys, 0 for a row that sees none.
"""
import torch
import torch.nn.functional as F


def _mask(S, seq_k, window_size, causal, device):
    m = torch.arange(S, device=device)[:, None]
    n = torch.arange(S, device=device)[None, :]
    keep = (n > m - window_size) & (n < seq_k)
    if causal:
        keep &= n <= m
    return keep


def reference(Q, K, V, *, CAUSAL, qk_scale, seq_k, window_size):
    """Out (B * H * S, D) f16, computed in fp32."""
    S, D = seq_k, Q.shape[1]
    q, k, v = (x.float().view(-1, S, D) for x in (Q, K, V))
    keep = _mask(S, seq_k, window_size, CAUSAL, Q.device)
    s = torch.matmul(q, k.transpose(-1, -2)) * qk_scale
    p = torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1).nan_to_num(0.0)
    return torch.matmul(p, v).view(-1, D).to(Q.dtype)


def torch_impl(Q, K, V, *, CAUSAL, qk_scale, seq_k, window_size):
    """PyTorch's fused attention with a boolean window mask, in f16."""
    S, D = seq_k, Q.shape[1]
    q, k, v = (x.view(1, -1, S, D) for x in (Q, K, V))
    keep = _mask(S, seq_k, window_size, CAUSAL, Q.device)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=qk_scale).view(-1, D)
