"""PyTorch semantics of TileGym's split-KV reduction (tilegym.ops.cutile.splitk_reduce).

Partial outputs O (B, H, S, D) and their base-2 log-sum-exp L (B, H, S):
w = 2^(L - max_s L), out = sum_s w_s O_s / sum_s w_s, in fp32, rounded once to O's dtype.
"""
import torch


def reference(attn_splitk_out: torch.Tensor, lse_splitk_out: torch.Tensor) -> torch.Tensor:
    w = torch.exp2(lse_splitk_out - lse_splitk_out.amax(dim=-1, keepdim=True))
    num = (w.unsqueeze(-1) * attn_splitk_out.float()).sum(dim=2)
    return (num / w.sum(dim=-1, keepdim=True)).to(attn_splitk_out.dtype)


def torch_impl(attn_splitk_out, lse_splitk_out):
    """The same merge with PyTorch ops in the partials' dtype (what a decode without a fused
    stage 2 runs): softmax of the base-2 LSE as weights, a batched weighted sum."""
    w = torch.softmax(lse_splitk_out * 0.6931471805599453, dim=-1).to(attn_splitk_out.dtype)
    return torch.matmul(w.unsqueeze(-2), attn_splitk_out).squeeze(-2)
