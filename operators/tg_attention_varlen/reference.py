"""PyTorch semantics of TileGym's variable-length flash attention
(tilegym.ops.cutile.attention_varlen._fmha_varlen_kernel).

Q (B, H, S_QO, D), K/V (B, HKV, S_KV, D), Q_lens / KV_lens (B,) int32. Batch item b has
q_len = Q_lens[b] (S_QO without Q_LEN_MASK) and kv_len = KV_lens[b] (S_KV without KV_LEN_MASK);
query row r sits at position kv_len - q_len + r and, causal, sees keys n <= that position, and
keys n < kv_len. Rows of a query tile (TILE_M rows) that starts at or past q_len are 0; the
other rows past q_len are computed like valid ones (the kernel does not mask them), so the
comparison covers every element.
"""
import torch
import torch.nn.functional as F


def _mask(b, S_QO, S_KV, Q_lens, KV_lens, CAUSAL, Q_LEN_MASK, KV_LEN_MASK, device):
    q_len = int(Q_lens[b]) if Q_LEN_MASK else S_QO
    kv_len = int(KV_lens[b]) if KV_LEN_MASK else S_KV
    pos = kv_len - q_len + torch.arange(S_QO, device=device)
    n = torch.arange(S_KV, device=device)
    keep = (n[None, :] < kv_len).expand(S_QO, S_KV)
    if CAUSAL:
        keep = keep & (n[None, :] <= pos[:, None])
    return q_len, keep


def reference(Q, K, V, Q_lens, KV_lens, *, CAUSAL, Q_LEN_MASK, KV_LEN_MASK, TILE_M, qk_scale):
    """Out (B, H, S_QO, D) in Q's dtype, computed in fp32."""
    B, H, S_QO, _ = Q.shape
    S_KV = K.shape[2]
    k = K.float().repeat_interleave(H // K.shape[1], dim=1)
    v = V.float().repeat_interleave(H // V.shape[1], dim=1)
    out = torch.zeros(Q.shape, dtype=torch.float32, device=Q.device)
    for b in range(B):
        q_len, keep = _mask(b, S_QO, S_KV, Q_lens, KV_lens, CAUSAL, Q_LEN_MASK, KV_LEN_MASK, Q.device)
        live = -(-q_len // TILE_M) * TILE_M          # rows of the tiles that start before q_len
        s = torch.matmul(Q[b, :, :live].float(), k[b].transpose(-1, -2)) * qk_scale
        s = s.masked_fill(~keep[:live], float("-inf"))
        out[b, :, :live] = torch.matmul(torch.softmax(s, dim=-1), v[b])
    return out.to(Q.dtype)


def torch_impl(Q, K, V, Q_lens, KV_lens, *, CAUSAL, Q_LEN_MASK, KV_LEN_MASK, TILE_M, qk_scale):
    """PyTorch's fused attention per batch item with a boolean mask, in the input dtype."""
    B, H, S_QO, _ = Q.shape
    S_KV = K.shape[2]
    outs = []
    for b in range(B):
        _, keep = _mask(b, S_QO, S_KV, Q_lens, KV_lens, CAUSAL, Q_LEN_MASK, KV_LEN_MASK, Q.device)
        outs.append(F.scaled_dot_product_attention(Q[b:b + 1], K[b:b + 1], V[b:b + 1], attn_mask=keep,
                                                   scale=qk_scale, enable_gqa=K.shape[1] != H))
    return torch.cat(outs)
