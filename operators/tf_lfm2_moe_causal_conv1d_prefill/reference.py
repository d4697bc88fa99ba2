"""PyTorch semantics of LFM2-MoE's prefill causal short conv (the wheel's FlashInfer-Bench
definition lfm2_moe_causal_conv1d_prefill): per channel of x (1, D, T), output[t] is the dot
product of the 3 weights with x[t - 2], x[t - 1], x[t] (zeros before the start), no activation,
in fp32, rounded once."""
import torch
import torch.nn.functional as F


def pad_left(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x with K - 1 zero columns in front of each channel's sequence (the launch code's host pad)."""
    return F.pad(x, (weight.shape[1] - 1, 0))


def reference(x: torch.Tensor, weight: torch.Tensor, x_padded: torch.Tensor) -> torch.Tensor:
    k, t = weight.shape[1], x.shape[-1]
    windows = F.pad(x.float(), (k - 1, 0)).unfold(-1, k, 1)[:, :, :t, :]    # (1, D, T, K)
    return (windows * weight.float()[None, :, None, :]).sum(dim=-1).to(x.dtype)


def torch_impl(x, weight, x_padded):
    """ATen's grouped conv1d with left padding (native dtype), timed as torch."""
    k = weight.shape[1]
    return F.conv1d(x, weight.unsqueeze(1), None, padding=k - 1, groups=x.shape[1])[:, :, : x.shape[-1]]
