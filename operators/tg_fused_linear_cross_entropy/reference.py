"""PyTorch semantics of TileGym's online cross-entropy kernel
(tilegym.ops.cutile.experimental.fused_linear_cross_entropy, _ce_online_kernel).

Per row r of logits (N_ROWS, V): loss[r] = logsumexp(logits[r]) - target_logits[r] (fp32), and
the row is overwritten with softmax(logits[r]) in the logits' dtype.
"""
import torch


def reference(logits: torch.Tensor, target_logits: torch.Tensor):
    """-> (probabilities (N_ROWS, V) in logits' dtype, loss (N_ROWS,) fp32)."""
    x = logits.float()
    return torch.softmax(x, dim=-1).to(logits.dtype), torch.logsumexp(x, dim=-1) - target_logits


def torch_impl(logits, target_logits):
    """PyTorch's own ops for the same two results (ATen logsumexp and softmax)."""
    loss = torch.logsumexp(logits.float(), dim=-1) - target_logits
    return torch.softmax(logits, dim=-1), loss
