"""PyTorch semantics of TileGym's attention variant kernels (tilegym.ops.cutile.attention_variant).

bnsd: Q (B, H, S_qo, D), K/V (B, HKV, S_kv, D); nsbd: the same permuted to (H, S, B, D).
Per batch item q_len = Q_lens[b] (S_qo without lengths), kv_len = KV_lens[b] (S_kv); query row
r sits at position p = kv_len - q_len + r. Scores s = qk_scale q.k plus, for ALiBi
(BIAS_TYPE 3), -slope_h * |p - n|; key n is visible when n < kv_len, n <= p (causal) and
|n - p| <= WINDOW_SIZE (window > 0). Rows of query tiles that start at or past q_len are 0.
Bias types 1/2 and the random mask take 4-D arrays (see the manifest); not covered here.
"""
import torch
import torch.nn.functional as F


def _bias_and_mask(b, S_qo, S_kv, Bias, Q_lens, KV_lens, *, CAUSAL, USE_Q_LENS, USE_KV_LENS,
                   WINDOW_SIZE, BIAS_TYPE, device):
    q_len = int(Q_lens[b]) if USE_Q_LENS else S_qo
    kv_len = int(KV_lens[b]) if USE_KV_LENS else S_kv
    pos = (kv_len - q_len + torch.arange(S_qo, device=device))[:, None]
    n = torch.arange(S_kv, device=device)[None, :]
    keep = (n < kv_len).expand(S_qo, S_kv)
    if CAUSAL:
        keep = keep & (n <= pos)
    if WINDOW_SIZE > 0:
        keep = keep & ((n - pos).abs() <= WINDOW_SIZE)
    bias = None
    if BIAS_TYPE == 3:
        bias = -Bias.float()[:, None, None] * (pos - n).abs().float()[None]    # (H, S_qo, S_kv)
    elif BIAS_TYPE != 0:
        raise NotImplementedError(f"BIAS_TYPE {BIAS_TYPE} takes a 4-D bias; this operator has none")
    return q_len, keep, bias


def reference(Q, K, V, Bias, Random_mask, Q_lens, KV_lens, *, CAUSAL, USE_Q_LENS, USE_KV_LENS,
              WINDOW_SIZE, BIAS_TYPE, USE_RANDOM_MASK, TILE_M, qk_scale):
    """bnsd: Out (B, H, S_qo, Dv) in Q's dtype, computed in fp32."""
    assert not USE_RANDOM_MASK, "the random mask takes a 4-D array; this operator has none"
    B, H, S_qo, _ = Q.shape
    S_kv = K.shape[2]
    k = K.float().repeat_interleave(H // K.shape[1], dim=1)
    v = V.float().repeat_interleave(H // V.shape[1], dim=1)
    out = torch.zeros(B, H, S_qo, V.shape[3], dtype=torch.float32, device=Q.device)
    for b in range(B):
        q_len, keep, bias = _bias_and_mask(b, S_qo, S_kv, Bias, Q_lens, KV_lens, CAUSAL=CAUSAL,
                                           USE_Q_LENS=USE_Q_LENS, USE_KV_LENS=USE_KV_LENS,
                                           WINDOW_SIZE=WINDOW_SIZE, BIAS_TYPE=BIAS_TYPE, device=Q.device)
        live = -(-q_len // TILE_M) * TILE_M
        s = torch.matmul(Q[b, :, :live].float(), k[b].transpose(-1, -2)) * qk_scale
        if bias is not None:
            s = s + bias[:, :live]
        s = s.masked_fill(~keep[:live], float("-inf"))
        out[b, :, :live] = torch.matmul(torch.softmax(s, dim=-1), v[b])
    return out.to(Q.dtype)


def torch_impl(Q, K, V, Bias, Random_mask, Q_lens, KV_lens, *, CAUSAL, USE_Q_LENS, USE_KV_LENS,
               WINDOW_SIZE, BIAS_TYPE, USE_RANDOM_MASK, TILE_M, qk_scale):
    """bnsd: PyTorch's fused attention with an additive float mask per batch item."""
    B, H, S_qo, _ = Q.shape
    S_kv = K.shape[2]
    outs = []
    for b in range(B):
        _, keep, bias = _bias_and_mask(b, S_qo, S_kv, Bias, Q_lens, KV_lens, CAUSAL=CAUSAL,
                                       USE_Q_LENS=USE_Q_LENS, USE_KV_LENS=USE_KV_LENS,
                                       WINDOW_SIZE=WINDOW_SIZE, BIAS_TYPE=BIAS_TYPE, device=Q.device)
        mask = torch.zeros(S_qo, S_kv, device=Q.device).masked_fill(~keep, float("-inf"))
        mask = (mask + bias if bias is not None else mask).to(Q.dtype)
        outs.append(F.scaled_dot_product_attention(Q[b:b + 1], K[b:b + 1], V[b:b + 1], attn_mask=mask,
                                                   scale=qk_scale, enable_gqa=K.shape[1] != H))
    return torch.cat(outs)


def _bnsd(x):
    return x.permute(2, 0, 1, 3)       # (H, S, B, D) -> (B, H, S, D)


def _nsbd(x):
    return x.permute(1, 2, 0, 3)       # (B, H, S, D) -> (H, S, B, D)


def reference_nsbd(Q, K, V, Bias, Random_mask, Q_lens, KV_lens, *, CAUSAL, USE_Q_LENS, USE_KV_LENS,
                   WINDOW_SIZE, BIAS_TYPE, USE_RANDOM_MASK, TILE_M, qk_scale):
    """nsbd: the bnsd semantics on (H, S, B, D) arrays."""
    launch = dict(CAUSAL=CAUSAL, USE_Q_LENS=USE_Q_LENS, USE_KV_LENS=USE_KV_LENS, WINDOW_SIZE=WINDOW_SIZE,
                  BIAS_TYPE=BIAS_TYPE, USE_RANDOM_MASK=USE_RANDOM_MASK, TILE_M=TILE_M, qk_scale=qk_scale)
    return _nsbd(reference(_bnsd(Q), _bnsd(K), _bnsd(V), Bias, Random_mask, Q_lens, KV_lens, **launch))


def torch_impl_nsbd(Q, K, V, Bias, Random_mask, Q_lens, KV_lens, *, CAUSAL, USE_Q_LENS, USE_KV_LENS,
                   WINDOW_SIZE, BIAS_TYPE, USE_RANDOM_MASK, TILE_M, qk_scale):
    launch = dict(CAUSAL=CAUSAL, USE_Q_LENS=USE_Q_LENS, USE_KV_LENS=USE_KV_LENS, WINDOW_SIZE=WINDOW_SIZE,
                  BIAS_TYPE=BIAS_TYPE, USE_RANDOM_MASK=USE_RANDOM_MASK, TILE_M=TILE_M, qk_scale=qk_scale)
    return _nsbd(torch_impl(_bnsd(Q), _bnsd(K), _bnsd(V), Bias, Random_mask, Q_lens, KV_lens, **launch))
