"""PyTorch semantics of LFM2-MoE's decode-step short conv (the wheel's FlashInfer-Bench definition
lfm2_moe_causal_conv1d_update): the state window (1, D, 3) drops its oldest column and takes the
new token; the output is each channel's dot product of that window with its 3 weights (no
activation). Batch 1, one token."""
import torch
import torch.nn.functional as F


def reference(x: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor):
    """(output (1, D, 1), new state (1, D, 3)); the dot product in fp32, rounded once."""
    window = torch.cat([conv_state[:, :, 1:], x], dim=-1)                     # (1, D, 3)
    dot = (window.float() * weight.float().unsqueeze(0)).sum(dim=-1, keepdim=True)
    return dot.to(x.dtype), window.to(conv_state.dtype)


def torch_impl(x, conv_state, weight):
    """ATen's grouped conv1d over state + token, as the model computes it, timed as torch."""
    full = torch.cat([conv_state, x], dim=-1)
    out = F.conv1d(full, weight.unsqueeze(1), None, padding=0, groups=x.shape[1])[:, :, -1:]
    return out, full[:, :, -3:]
