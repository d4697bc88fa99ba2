"""PyTorch semantics of Qwen3.5's gated RMSNorm (the wheel's FlashInfer-Bench definition
qwen3_5_rms_norm_gated_silu). Per row of D values: the row scaled by 1 / sqrt(mean(row^2) + eps)
(fp32, then rounded to the input dtype as the model does), times weight, times silu(gate) in
fp32, rounded once more to the input dtype."""
import torch
import torch.nn.functional as F


def reference(hidden_states: torch.Tensor, gate: torch.Tensor, weight: torch.Tensor, *, eps: float):
    dt = hidden_states.dtype
    h = hidden_states.float()
    inv_rms = 1.0 / torch.sqrt((h * h).mean(dim=-1, keepdim=True) + eps)
    scaled = weight * (h * inv_rms).to(dt)
    return (scaled.float() * F.silu(gate.float())).to(dt)


def torch_impl(hidden_states, gate, weight, *, eps):
    """The same with ATen's fused rms_norm and silu, timed as torch."""
    normed = F.rms_norm(hidden_states.float(), (hidden_states.shape[-1],), None, eps).to(hidden_states.dtype)
    return ((weight * normed).float() * F.silu(gate.float())).to(hidden_states.dtype)
