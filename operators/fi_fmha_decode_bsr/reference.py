"""PyTorch semantics of FlashInfer's paged decode attention in TileGym's cuTile suite
(tilegym.suites.flashinfer.cutile.fmha_decode_bsr).

Paged KV: sequence b has actual_seq_lens[b] keys; key n lives in page
block_tables[b * NP + n // PAGE_SIZE] at row n % PAGE_SIZE (NP = cdiv(S, PAGE_SIZE) page ids
per sequence). Split i of sequence b covers keys [i * P, min((i + 1) * P, len)) (all keys when
P = KV_LEN_PER_SPLIT <= 0); a split with no key is not written (its output keeps the buffer's
zeros, its LSE the buffer's -inf). Per split: out = V_SCALE * softmax(K_SCALE * q.k) v in q's
dtype, LSE = log2(sum exp(K_SCALE * q.k)) in f32. The reduce merges splits j < min(cdiv(len, P),
NUM_KV_SPLITS) with weights 2^(LSE_j - max LSE), normalised.
"""
import torch


def _keys(cache, block_tables, b, NP, PAGE_SIZE, n0, n1):
    """Rows n0 <= n < n1 of sequence b's paged cache (pages, PAGE_SIZE, ...) in fp32."""
    n = torch.arange(n0, n1, device=cache.device)
    pages = block_tables[b * NP + n // PAGE_SIZE].long()
    return cache[pages, n % PAGE_SIZE].float()


def _attend(scores, values, K_SCALE, V_SCALE):
    """(out (..., D), lse base 2) of fp32 scores (..., n) and values (n, D)."""
    s = scores * K_SCALE
    lse = torch.logsumexp(s, dim=-1)
    out = torch.softmax(s, dim=-1) @ values * V_SCALE
    return out, lse / torch.log(torch.tensor(2.0, device=s.device))


def _splits(seq_len, KV_LEN_PER_SPLIT, NUM_KV_SPLITS):
    for i in range(NUM_KV_SPLITS):
        n0, n1 = (i * KV_LEN_PER_SPLIT, min((i + 1) * KV_LEN_PER_SPLIT, seq_len)) if KV_LEN_PER_SPLIT > 0 \
            else (0, seq_len)
        if n0 < n1:
            yield i, n0, n1


def decode_gqa_reference(q, k_cache, v_cache, actual_seq_lens, block_tables, *, PAGE_SIZE, QUERY_GROUP_SIZE,
                         NUM_KV_SPLITS, KV_LEN_PER_SPLIT, K_SCALE, V_SCALE, S, HAS_LSE_OUT):
    """(output (NUM_KV_SPLITS, B, H, D) in q's dtype, lse_out (B, H, NUM_KV_SPLITS) f32) of
    q (B, H, D) against k/v caches (pages, PAGE_SIZE, HKV, D); head h reads KV head
    h // QUERY_GROUP_SIZE. Without HAS_LSE_OUT the kernel leaves lse_out as the manifest's init
    (-inf)."""
    B, H, D = q.shape
    NP = -(-S // PAGE_SIZE)
    out = torch.zeros(NUM_KV_SPLITS, B, H, D, device=q.device, dtype=torch.float32)
    lse = torch.full((B, H, NUM_KV_SPLITS), float("-inf"), device=q.device)
    kv_head = torch.arange(H, device=q.device) // QUERY_GROUP_SIZE
    for b in range(B):
        for i, n0, n1 in _splits(int(actual_seq_lens[b]), KV_LEN_PER_SPLIT, NUM_KV_SPLITS):
            k = _keys(k_cache, block_tables, b, NP, PAGE_SIZE, n0, n1)[:, kv_head]   # (n, H, D)
            v = _keys(v_cache, block_tables, b, NP, PAGE_SIZE, n0, n1)[:, kv_head]
            s = torch.einsum("hd,nhd->hn", q[b].float(), k)
            p = torch.softmax(s * K_SCALE, dim=-1)
            out[i, b] = torch.einsum("hn,nhd->hd", p, v) * V_SCALE
            if HAS_LSE_OUT:
                lse[b, :, i] = torch.logsumexp(s * K_SCALE, dim=-1) / torch.log(torch.tensor(2.0))
    return out.to(q.dtype), lse


def decode_mla_reference(q_nope, q_rope, kv_cache, k_rope, actual_seq_lens, block_tables, *, PAGE_SIZE,
                         NUM_KV_SPLITS, KV_LEN_PER_SPLIT, K_SCALE, V_SCALE, S):
    """(output (NUM_KV_SPLITS, B, H, D) in q_nope's dtype, lse_out (B, H, NUM_KV_SPLITS) f32) of
    absorbed MLA: scores q_nope.kv + q_rope.k_rope, values the latent kv itself."""
    B, H, D = q_nope.shape
    NP = -(-S // PAGE_SIZE)
    out = torch.zeros(NUM_KV_SPLITS, B, H, D, device=q_nope.device, dtype=torch.float32)
    lse = torch.full((B, H, NUM_KV_SPLITS), float("-inf"), device=q_nope.device)
    for b in range(B):
        for i, n0, n1 in _splits(int(actual_seq_lens[b]), KV_LEN_PER_SPLIT, NUM_KV_SPLITS):
            kv = _keys(kv_cache, block_tables, b, NP, PAGE_SIZE, n0, n1)                # (n, D)
            kr = _keys(k_rope, block_tables, b, NP, PAGE_SIZE, n0, n1)
            s = q_nope[b].float() @ kv.T + q_rope[b].float() @ kr.T
            out[i, b], lse[b, :, i] = _attend(s, kv, K_SCALE, V_SCALE)
    return out.to(q_nope.dtype), lse


def splitk_reduce_reference(attn_splitk_out, lse_splitk_out, actual_seq_lens, *, NUM_KV_LEN_PER_SPLIT,
                            NUM_KV_SPLITS):
    """attn_out (B, H, D) in the partials' dtype: splits (NUM_KV_SPLITS, B, H, D) merged by their
    base-2 LSE (B, H, >= NUM_KV_SPLITS, f32), only the first min(cdiv(len_b, P), NUM_KV_SPLITS)."""
    n = torch.clamp((actual_seq_lens.long() + NUM_KV_LEN_PER_SPLIT - 1) // NUM_KV_LEN_PER_SPLIT,
                    max=NUM_KV_SPLITS)                                                   # (B,)
    lse = lse_splitk_out[:, :, :NUM_KV_SPLITS].float()
    valid = torch.arange(NUM_KV_SPLITS, device=lse.device)[None, None, :] < n[:, None, None]
    lse = torch.where(valid, lse, torch.full_like(lse, -1e30))
    w = torch.where(valid, torch.exp2(lse - lse.amax(-1, keepdim=True)), torch.zeros_like(lse))
    w = w / w.sum(-1, keepdim=True)
    out = torch.einsum("bhs,sbhd->bhd", w, attn_splitk_out.float())
    return out.to(attn_splitk_out.dtype)
