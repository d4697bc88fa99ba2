"""PyTorch semantics of the causal masks of Liger's multi-token attention
(tilegym.suites.liger.cutile.multi_token_attention) on (N, L, L) scores: column j of row i is
kept where j <= i; above the diagonal it becomes -1e9 (mask_inf) or 0 (mask_zero, the mask's
backward); the fused softmax backward is dx = p (dp - sum_j p dp), zeroed above the diagonal."""
import torch


def _past(x):
    """(L, L) bool: column <= row."""
    n = x.shape[-1]
    return torch.ones(n, n, dtype=torch.bool, device=x.device).tril()


def mask_inf_reference(scores):
    """scores (N, L, L) with -1e9 above the diagonal, fp32 then scores' dtype."""
    return torch.where(_past(scores), scores.float(), torch.tensor(-1e9, device=scores.device)).to(scores.dtype)


def mask_zero_reference(scores):
    """scores (N, L, L) with 0 above the diagonal."""
    return torch.where(_past(scores), scores.float(), 0.0).to(scores.dtype)


def softmax_zeromask_bwd_reference(probs, grad_probs):
    """dx (N, L, L) = p (dp - sum_j p dp) (fp32) where column <= row, else 0; probs' dtype."""
    p, dp = probs.float(), grad_probs.float()
    dot = (p * dp).sum(-1, keepdim=True)
    return torch.where(_past(probs), p * (dp - dot), 0.0).to(probs.dtype)
