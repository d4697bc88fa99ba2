"""PyTorch semantics of TileGym's absorbed-MLA decode attention
(tilegym.ops.cutile.mla_decoding._naive_absorb_mla_transpose_kernel).

Q (B, H, D), QPE (B, H, DPE), kv (B, S, D) = the keys and the values, KPE (B, S, DPE).
s = sm_scale (q kv^T + qpe KPE^T) over all S keys; Out = softmax(s) kv in Q's dtype,
L = log2(sum exp(s)) (B, H) in f32.
"""
import math

import torch


def _scores(Q, QPE, kv, KPE, sm_scale, dtype):
    return (torch.matmul(Q.to(dtype), kv.to(dtype).transpose(-1, -2)).float()
            + torch.matmul(QPE.to(dtype), KPE.to(dtype).transpose(-1, -2)).float()) * sm_scale


def reference(Q, QPE, kv, KPE, *, sm_scale):
    """(Out (B, H, D) in Q's dtype, L (B, H) f32), computed in fp32."""
    s = _scores(Q, QPE, kv, KPE, sm_scale, torch.float32)
    out = torch.matmul(torch.softmax(s, dim=-1), kv.float()).to(Q.dtype)
    return out, torch.logsumexp(s, dim=-1) / math.log(2)


def torch_impl(Q, QPE, kv, KPE, *, sm_scale):
    """cuBLAS batched matmuls in the input dtype, softmax in fp32."""
    s = _scores(Q, QPE, kv, KPE, sm_scale, Q.dtype)
    out = torch.matmul(torch.softmax(s, dim=-1).to(Q.dtype), kv)
    return out, torch.logsumexp(s, dim=-1) / math.log(2)
