"""PyTorch semantics of Unsloth's MoE grouped GEMM (tilegym.suites.unsloth.cutile.grouped_gemm):
expert e owns the sorted positions p in [off[e], off[e + 1]) (off the running sum of m_sizes);
gather_indices[p] is the expert slot (token * TOPK + k) at p. PERMUTE_X: X read at token
gather_indices[p] // TOPK, results at p; PERMUTE_Y: X at p, Y / dY at gather_indices[p]."""
import torch


def expert_sizes(*inputs):
    """m_sizes (NUM_EXPERTS,) int32 from the expert_offsets input (the last one before it)."""
    off = inputs[-1]
    return (off[1:] - off[:-1]).to(torch.int32)


def _runs(m_sizes):
    off = [0]
    for s in m_sizes.tolist():
        off.append(off[-1] + s)
    return [(e, torch.arange(off[e], off[e + 1], device=m_sizes.device)) for e in range(len(m_sizes))]


def fwd_reference(X, W_flat, expert_offsets, m_sizes, gather_indices, *, N, TOPK, PERMUTE_X, PERMUTE_Y):
    """X (tokens, K), W_flat (E * N, K) -> Y (TOTAL_TOKENS, N) fp32, Y = X @ W[e]^T per run."""
    W = W_flat.float().view(len(m_sizes), N, -1)
    gi = gather_indices.long()
    Y = torch.zeros(gi.shape[0], N, dtype=torch.float32, device=X.device)
    for e, p in _runs(m_sizes):
        if PERMUTE_X:
            Y[p] = X[gi[p] // TOPK].float() @ W[e].T
        elif PERMUTE_Y:
            Y[gi[p]] = X[p].float() @ W[e].T
        else:
            Y[p] = X[p].float() @ W[e].T
    return Y


def dx_reference(dY, W_flat, expert_offsets, m_sizes, gather_indices, *, N, PERMUTE_X, PERMUTE_Y):
    """dY (TOTAL_TOKENS, N), W_flat (E * N, K) -> dX (TOTAL_TOKENS, K) fp32 (per slot; the
    autograd function sums the TOPK slots of a token afterwards)."""
    W = W_flat.float().view(len(m_sizes), N, -1)
    gi = gather_indices.long()
    dX = torch.zeros(gi.shape[0], W.shape[2], dtype=torch.float32, device=dY.device)
    for e, p in _runs(m_sizes):
        if PERMUTE_X:
            dX[gi[p]] = dY[p].float() @ W[e]
        elif PERMUTE_Y:
            dX[p] = dY[gi[p]].float() @ W[e]
        else:
            dX[p] = dY[p].float() @ W[e]
    return dX


def dw_reference(X, dY, expert_offsets, m_sizes, gather_indices, *, N, TOPK, PERMUTE_X, PERMUTE_Y):
    """X (tokens, K), dY (TOTAL_TOKENS, N) -> dW (E * N, K) fp32, dW[e] = dY^T @ X over e's run."""
    gi = gather_indices.long()
    dW = torch.zeros(len(m_sizes), N, X.shape[1], dtype=torch.float32, device=X.device)
    for e, p in _runs(m_sizes):
        if PERMUTE_X:
            dW[e] = dY[p].float().T @ X[gi[p] // TOPK].float()
        elif PERMUTE_Y:
            dW[e] = dY[gi[p]].float().T @ X[p].float()
        else:
            dW[e] = dY[p].float().T @ X[p].float()
    return dW.view(-1, X.shape[1])
