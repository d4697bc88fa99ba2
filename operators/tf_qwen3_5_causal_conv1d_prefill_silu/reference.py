"""PyTorch semantics of Qwen3.5's prefill causal conv1d with SiLU (the wheel's FlashInfer-Bench
definition qwen3_5_causal_conv1d_prefill_silu): x (1, D, T + 3) holds each channel's sequence
after 3 leading padding columns; output (1, D, T) at position t is silu of the dot product of
x[:, :, t:t + 4] with the channel's 4 weights, in fp32, rounded once."""
import torch
import torch.nn.functional as F


def reference(x: torch.Tensor, weight: torch.Tensor, *, T: int):
    k = weight.shape[1]
    windows = x.float().unfold(-1, k, 1)[:, :, :T, :]              # (1, D, T, K)
    dot = (windows * weight.float()[None, :, None, :]).sum(dim=-1)
    return F.silu(dot).to(x.dtype)


def torch_impl(x, weight, *, T):
    """ATen's grouped conv1d (native dtype), then silu, timed as torch."""
    out = F.conv1d(x, weight.unsqueeze(1), None, padding=0, groups=x.shape[1])[:, :, :T]
    return F.silu(out)
