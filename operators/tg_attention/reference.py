"""PyTorch semantics of TileGym's flash attention kernels (tilegym.ops.cutile.attention).

Shapes: Q, dO, Out, dQ (B, H, S, D); K, V, dK, dV (B, HKV, S, D), query head h reading KV head
h // (H // HKV). Scores s = qk_scale * Q K^T, causal rows i see keys j <= i (S queries, S keys,
so bottom-right and top-left alignment agree). LSE and Delta are flat f32 arrays over
(B, H, SEQ_LEN) rows, SEQ_LEN >= S (TileGym pads to the largest tile M); the kernels read and
write the first S of each (b, h) row block. The backward references compute exactly what the
kernels compute from the LSE and Delta they are given: P = 2^(s / ln 2 - LSE), dP = dO V^T,
dS = P (dP - Delta), dV = P^T dO, dK = qk_scale dS^T Q (summed over the query heads of a KV
head), dQ = qk_scale dS K -- with a forward's own LSE and Delta these are the gradients. As the
kernels do, P and dS are rounded to the input dtype before the products that make dV, dK and dQ
(``p_t.astype(Q.dtype)``, ``ds_t.astype(Q.dtype)``, ``ds.astype(Q.dtype)`` in attention.py), which
accumulate in fp32. At S = 4096 the sum dQ = qk_scale sum_j dS_ij K_j can cancel terms whose
magnitudes add up to tens of thousands of times the result, so the rounding of dS alone moves an
output by up to ~0.1, and an fp32 dS puts the expected value that far from a bf16 kernel's
(measured on the H200, 2026-12-02: dQ[1, 22, 3975, 12] of the 4 x 32 x 32 x 4096 x 128 bf16
config, seed 0: kernel -0.078, fp32 dS 0.0014, fp64 0.0014, sum_j |qk_scale dS_ij K_j12| 98.6,
about 70,000 times the result).
"""
import math

import torch
import torch.nn.functional as F


def _expand_kv(x, h):
    return x.repeat_interleave(h // x.shape[1], dim=1)


def _scores(Q, K, qk_scale, causal, dtype=torch.float32):
    s = torch.matmul(Q.to(dtype), _expand_kv(K, Q.shape[1]).to(dtype).transpose(-1, -2)).float() * qk_scale
    if causal:
        S = Q.shape[2]
        keep = torch.ones(S, K.shape[2], dtype=torch.bool, device=Q.device).tril(K.shape[2] - S)
        s = s.masked_fill(~keep, float("-inf"))
    return s


def _rows(flat, B, H, S):
    """The first S of each (b, h) row block of a flat (B * H * SEQ_LEN,) array, as (B, H, S, 1)."""
    return flat.view(B, H, -1)[:, :, :S].unsqueeze(-1)


def reference(Q, K, V, *, CAUSAL, qk_scale):
    """_fmha_kernel: Out in Q's dtype, computed in fp32."""
    p = torch.softmax(_scores(Q, K, qk_scale, CAUSAL), dim=-1)
    return torch.matmul(p, _expand_kv(V, Q.shape[1]).float()).to(Q.dtype)


def torch_impl(Q, K, V, *, CAUSAL, qk_scale):
    """PyTorch's fused attention in the input dtype (GQA through enable_gqa)."""
    return F.scaled_dot_product_attention(Q, K, V, is_causal=CAUSAL, scale=qk_scale,
                                          enable_gqa=K.shape[1] != Q.shape[1])


def fwd_with_lse_reference(Q, K, V, *, CAUSAL, qk_scale, SEQ_LEN):
    """_fmha_fwd_kernel_with_lse: (Out, LSE flat (B * H * SEQ_LEN,) f32, base 2, 0 in padding rows)."""
    B, H, S, _ = Q.shape
    s = _scores(Q, K, qk_scale, CAUSAL)
    out = torch.matmul(torch.softmax(s, dim=-1), _expand_kv(V, H).float()).to(Q.dtype)
    lse = torch.zeros(B, H, SEQ_LEN, dtype=torch.float32, device=Q.device)
    lse[:, :, :S] = torch.logsumexp(s, dim=-1) / math.log(2)
    return out, lse.view(-1)


def fwd_with_lse_torch(Q, K, V, *, CAUSAL, qk_scale, SEQ_LEN):
    out = torch_impl(Q, K, V, CAUSAL=CAUSAL, qk_scale=qk_scale)
    lse = torch.logsumexp(_scores(Q, K, qk_scale, CAUSAL, Q.dtype), dim=-1) / math.log(2)
    return out, lse


def bwd_preprocess_reference(O, dO, *, SEQ_LEN):
    """_fmha_bwd_preprocess_kernel: Delta flat (B * H * SEQ_LEN,) f32 = rowsum(O * dO), 0 in padding."""
    B, H, S, _ = O.shape
    delta = torch.zeros(B, H, SEQ_LEN, dtype=torch.float32, device=O.device)
    delta[:, :, :S] = (O.float() * dO.float()).sum(-1)
    return delta.view(-1)


def bwd_preprocess_torch(O, dO, *, SEQ_LEN):
    return (O * dO).sum(-1, dtype=torch.float32)


def _probs_and_ds(Q, K, V, dO, LSE, Delta, qk_scale, causal, dtype):
    B, H, S, _ = Q.shape
    s = _scores(Q, K, qk_scale, causal, dtype)
    p = torch.exp2(s / math.log(2) - _rows(LSE, B, H, S))          # masked entries: 2^-inf = 0
    dp = torch.matmul(dO.to(dtype), _expand_kv(V, H).to(dtype).transpose(-1, -2)).float()
    return p, p * (dp - _rows(Delta, B, H, S))


def _rounded(x, dtype):
    """fp32 ``x`` rounded to ``dtype`` (as the kernel's ``astype`` before an MMA) and back to fp32."""
    return x.to(dtype).float()


def _group_sum(x, hkv):
    B, H, S, D = x.shape
    return x.view(B, hkv, H // hkv, S, D).sum(2)


def bwd_dkdv_reference(Q, K, V, dO, LSE, Delta, *, CAUSAL, qk_scale):
    """_fmha_bwd_dkdv_kernel: (dK, dV) in K's dtype, computed in fp32 from P and dS rounded to Q's dtype."""
    p, ds = _probs_and_ds(Q, K, V, dO, LSE, Delta, qk_scale, CAUSAL, torch.float32)
    p, ds = _rounded(p, Q.dtype), _rounded(ds, Q.dtype)
    dv = _group_sum(torch.matmul(p.transpose(-1, -2), dO.float()), K.shape[1])
    dk = _group_sum(torch.matmul(ds.transpose(-1, -2), Q.float()), K.shape[1]) * qk_scale
    return dk.to(K.dtype), dv.to(V.dtype)


def bwd_dkdv_torch(Q, K, V, dO, LSE, Delta, *, CAUSAL, qk_scale):
    """The same with cuBLAS matmuls in the input dtype."""
    p, ds = _probs_and_ds(Q, K, V, dO, LSE, Delta, qk_scale, CAUSAL, Q.dtype)
    dv = _group_sum(torch.matmul(p.to(Q.dtype).transpose(-1, -2), dO), K.shape[1])
    dk = _group_sum(torch.matmul(ds.to(Q.dtype).transpose(-1, -2), Q), K.shape[1]) * qk_scale
    return dk, dv


def bwd_dq_reference(Q, K, V, dO, LSE, Delta, *, CAUSAL, qk_scale):
    """_fmha_bwd_dq_kernel: dQ in Q's dtype, computed in fp32 from dS rounded to Q's dtype."""
    _, ds = _probs_and_ds(Q, K, V, dO, LSE, Delta, qk_scale, CAUSAL, torch.float32)
    return (torch.matmul(_rounded(ds, Q.dtype), _expand_kv(K, Q.shape[1]).float()) * qk_scale).to(Q.dtype)


def bwd_dq_torch(Q, K, V, dO, LSE, Delta, *, CAUSAL, qk_scale):
    _, ds = _probs_and_ds(Q, K, V, dO, LSE, Delta, qk_scale, CAUSAL, Q.dtype)
    return torch.matmul(ds.to(Q.dtype), _expand_kv(K, Q.shape[1])) * qk_scale
