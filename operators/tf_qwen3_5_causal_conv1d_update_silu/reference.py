"""PyTorch semantics of Qwen3.5's decode-step causal conv1d with SiLU (the wheel's FlashInfer-Bench
definition qwen3_5_causal_conv1d_update_silu): a depthwise convolution of width 4 over the last
three state columns and the new token, per channel, then silu; the state window moves by one
token. Batch 1, one token."""
import torch
import torch.nn.functional as F


def reference(hidden_states: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor):
    """(output (1, D, 1), new state (1, D, 4)): the state's columns 1..3 followed by the token, and
    silu of its dot product with each channel's 4 weights (fp32, rounded once)."""
    window = torch.cat([conv_state[:, :, 1:], hidden_states], dim=-1)          # (1, D, 4)
    dot = (window.float() * weight.float().unsqueeze(0)).sum(dim=-1, keepdim=True)
    return F.silu(dot).to(hidden_states.dtype), window.to(conv_state.dtype)


def torch_impl(hidden_states, conv_state, weight):
    """ATen's grouped conv1d over state + token, as the model computes it, timed as torch."""
    d = hidden_states.shape[1]
    full = torch.cat([conv_state, hidden_states], dim=-1)
    out = F.conv1d(full, weight.unsqueeze(1), None, padding=0, groups=d)[:, :, -1:]
    return F.silu(out), full[:, :, -4:]
