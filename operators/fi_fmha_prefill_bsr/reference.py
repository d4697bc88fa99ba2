"""PyTorch semantics of FlashInfer's prefill attention in TileGym's cuTile suite
(tilegym.suites.flashinfer.cutile.fmha_prefill_bsr).

Sequence b: queries query[o : o + Lq] (o = batch_offsets[b], Lq = actual_seq_lens_q[b]) attend
to Lkv = actual_seq_lens_kv[b] keys: ragged, key_cache[o : o + Lkv]; paged, key n in page
block_tables[b * NP + n // PAGE_SIZE] at row n % PAGE_SIZE (NP = cdiv(S, PAGE_SIZE)). Query head
h reads KV head h // QUERY_GROUP_SIZE; causal keeps keys n <= m (top-left aligned). out =
V_SCALE * softmax(K_SCALE q.k) v in q's dtype; lse = logsumexp(K_SCALE q.k) (natural log, f32).
Rows outside every sequence keep the buffers' zeros.
"""
import torch


def seq_offsets(query, key_cache, value_cache, actual_seq_lens_q, actual_seq_lens_kv, *, S):
    """Sequence b's slot starts at b * S (int32); derive passes the inputs before it, in manifest order."""
    return (torch.arange(actual_seq_lens_q.shape[0], device=actual_seq_lens_q.device) * S).to(torch.int32)


def kv_lens(query, key_cache, value_cache, actual_seq_lens_q):
    """Prefill without a prior cache: as many keys as queries (int32); derive passes the inputs before it."""
    return actual_seq_lens_q.clone()


def _attend(q, k, v, causal, K_SCALE, V_SCALE, QUERY_GROUP_SIZE):
    """q (Lq, H, D), k / v (Lkv, HKV, D) fp32 -> (out (Lq, H, D), lse (Lq, H))."""
    H = q.shape[1]
    kv_head = torch.arange(H, device=q.device) // QUERY_GROUP_SIZE
    k, v = k[:, kv_head], v[:, kv_head]
    s = torch.einsum("mhd,nhd->hmn", q, k) * K_SCALE
    if causal:
        m = torch.arange(q.shape[0], device=q.device)[:, None]
        n = torch.arange(k.shape[0], device=q.device)[None, :]
        s = s.masked_fill(n > m, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)                                    # (H, Lq)
    out = torch.einsum("hmn,nhd->mhd", torch.softmax(s, dim=-1), v) * V_SCALE
    return out, lse.T


def _prefill(query, keys, values, actual_seq_lens_q, actual_seq_lens_kv, batch_offsets, IS_CAUSAL,
             K_SCALE, V_SCALE, QUERY_GROUP_SIZE):
    out = torch.zeros(query.shape, device=query.device, dtype=torch.float32)
    lse = torch.zeros(query.shape[:2], device=query.device, dtype=torch.float32)
    for b in range(actual_seq_lens_q.shape[0]):
        o, lq, lkv = int(batch_offsets[b]), int(actual_seq_lens_q[b]), int(actual_seq_lens_kv[b])
        k, v = keys(b, o, lkv), values(b, o, lkv)
        out[o:o + lq], lse[o:o + lq] = _attend(query[o:o + lq].float(), k, v, IS_CAUSAL, K_SCALE, V_SCALE,
                                               QUERY_GROUP_SIZE)
    return out.to(query.dtype), lse


def prefill_ragged_reference(query, key_cache, value_cache, actual_seq_lens_q, actual_seq_lens_kv, batch_offsets, *,
                             IS_CAUSAL, K_SCALE, V_SCALE, QUERY_GROUP_SIZE):
    """(output (T, H, D) in query's dtype, lse_output (T, H) f32) with K/V packed (T, HKV, D)."""
    return _prefill(query, lambda b, o, n: key_cache[o:o + n].float(), lambda b, o, n: value_cache[o:o + n].float(),
                    actual_seq_lens_q, actual_seq_lens_kv, batch_offsets, IS_CAUSAL, K_SCALE, V_SCALE,
                    QUERY_GROUP_SIZE)


def prefill_paged_reference(query, key_cache, value_cache, actual_seq_lens_q, actual_seq_lens_kv, batch_offsets,
                            block_tables, *, IS_CAUSAL, K_SCALE, V_SCALE, QUERY_GROUP_SIZE, PAGE_SIZE, S):
    """(output (T, H, D) in query's dtype, lse_output (T, H) f32) with K/V paged
    (pages, PAGE_SIZE, HKV, D)."""
    NP = -(-S // PAGE_SIZE)

    def paged(cache):
        def rows(b, o, n):
            i = torch.arange(n, device=cache.device)
            return cache[block_tables[b * NP + i // PAGE_SIZE].long(), i % PAGE_SIZE].float()
        return rows

    return _prefill(query, paged(key_cache), paged(value_cache), actual_seq_lens_q, actual_seq_lens_kv,
                    batch_offsets, IS_CAUSAL, K_SCALE, V_SCALE, QUERY_GROUP_SIZE)
