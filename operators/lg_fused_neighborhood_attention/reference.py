"""PyTorch semantics of Liger's fused 1-D neighborhood attention in TileGym's cuTile suite
(tilegym.suites.liger.cutile.fused_neighborhood_attention).

Q, K, V (B, H, S, D). Query i sees key j where |j - i| <= (KERNEL_SIZE // 2) * DILATION and
(j - i) % DILATION == 0. Forward: out = softmax(qk_scale q.k) v (q's dtype) and the base-2
log-sum-exp lse = log2(sum exp(qk_scale q.k)) per row in a flat f32 buffer of B * H * PS rows
(PS = cdiv(S, BLOCK_M) * BLOCK_M; padding rows 1e30). Backward with P rebuilt from lse and
delta = rowsum(out * dout) (padding rows 0): dV = P^T dO, dS = P (dO V^T - delta),
dK = qk_scale dS^T Q, dQ = qk_scale dS K.
"""
import torch


def _mask(S, KERNEL_SIZE, DILATION, device):
    i = torch.arange(S, device=device)[:, None]
    j = torch.arange(S, device=device)[None, :]
    rel = j - i
    return (rel.abs() <= (KERNEL_SIZE // 2) * DILATION) & (rel % DILATION == 0)


def _padded(rows, BLOCK_M, fill):
    """(B, H, S) -> the flat (B * H * PS,) buffer, padding rows ``fill``."""
    B, H, S = rows.shape
    PS = -(-S // BLOCK_M) * BLOCK_M
    out = torch.full((B, H, PS), fill, dtype=torch.float32, device=rows.device)
    out[..., :S] = rows
    return out.reshape(-1)


def _probs(query, key, KERNEL_SIZE, DILATION, qk_scale):
    s = torch.matmul(query.float(), key.float().transpose(-1, -2)) * qk_scale
    s = s.masked_fill(~_mask(query.shape[2], KERNEL_SIZE, DILATION, query.device), float("-inf"))
    return torch.softmax(s, dim=-1), torch.logsumexp(s, dim=-1)


def fna_forward(query, key, value, *, KERNEL_SIZE, DILATION, BLOCK_M, qk_scale):
    """(output (B, H, S, D) in query's dtype, lse_cache (B * H * PS,) f32, base 2)."""
    p, lse = _probs(query, key, KERNEL_SIZE, DILATION, qk_scale)
    out = torch.matmul(p, value.float())
    return out.to(query.dtype), _padded(lse / torch.log(torch.tensor(2.0)), BLOCK_M, 1e30)


def fna_delta(output, grad_output, *, BLOCK_M):
    """delta_cache (B * H * PS,) f32: rowsum(output * grad_output), padding rows 0."""
    return _padded((output.float() * grad_output.float()).sum(-1), BLOCK_M, 0.0)


def saved_lse(query, key, value, grad_output, *, KERNEL_SIZE, DILATION, BLOCK_M, qk_scale):
    """The forward's lse_cache for these inputs (the backward's saved input)."""
    return fna_forward(query, key, value, KERNEL_SIZE=KERNEL_SIZE, DILATION=DILATION, BLOCK_M=BLOCK_M,
                       qk_scale=qk_scale)[1]


def saved_delta(query, key, value, grad_output, lse_cache, *, KERNEL_SIZE, DILATION, BLOCK_M, qk_scale):
    """The preprocess kernel's delta_cache for the forward's output and grad_output."""
    out = fna_forward(query, key, value, KERNEL_SIZE=KERNEL_SIZE, DILATION=DILATION, BLOCK_M=BLOCK_M,
                      qk_scale=qk_scale)[0]
    return fna_delta(out, grad_output, BLOCK_M=BLOCK_M)


def _grads(query, key, value, grad_output, KERNEL_SIZE, DILATION, qk_scale):
    p, _ = _probs(query, key, KERNEL_SIZE, DILATION, qk_scale)
    do, v = grad_output.float(), value.float()
    out = torch.matmul(p, v)
    delta = (out * do).sum(-1, keepdim=True)
    ds = p * (torch.matmul(do, v.transpose(-1, -2)) - delta)
    dq = torch.matmul(ds, key.float()) * qk_scale
    dk = torch.matmul(ds.transpose(-1, -2), query.float()) * qk_scale
    dv = torch.matmul(p.transpose(-1, -2), do)
    return dq, dk, dv


def fna_dkdv(query, key, value, grad_output, lse_cache, delta_cache, *, KERNEL_SIZE, DILATION, qk_scale):
    """(grad_key, grad_value) (B, H, S, D) in key's / value's dtype."""
    _, dk, dv = _grads(query, key, value, grad_output, KERNEL_SIZE, DILATION, qk_scale)
    return dk.to(key.dtype), dv.to(value.dtype)


def fna_dq(query, key, value, grad_output, lse_cache, delta_cache, *, KERNEL_SIZE, DILATION, qk_scale):
    """grad_query (B, H, S, D) in query's dtype."""
    return _grads(query, key, value, grad_output, KERNEL_SIZE, DILATION, qk_scale)[0].to(query.dtype)
