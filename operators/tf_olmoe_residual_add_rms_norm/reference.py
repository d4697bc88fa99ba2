"""PyTorch semantics of OLMoE's residual add followed by RMSNorm (the wheel's FlashInfer-Bench
definition olmoe_residual_add_rms_norm). Per row of D values: sum = residual + x (rounded to the
input dtype, as the model keeps it), then normed = sum / sqrt(mean(sum^2) + eps) * weight in
fp32, rounded once."""
import torch


def reference(residual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, *, eps: float):
    """(sum, normed), both (N, D) in the inputs' dtype."""
    total = residual + x
    t = total.float()
    inv_rms = 1.0 / torch.sqrt((t * t).mean(dim=-1, keepdim=True) + eps)
    return total, (t * inv_rms * weight.float()).to(total.dtype)


def torch_impl(residual, x, weight, *, eps):
    """The same with ATen's fused rms_norm (fp32 math), timed as torch."""
    total = residual + x
    normed = torch.nn.functional.rms_norm(total.float(), (total.shape[-1],), weight.float(), eps)
    return total, normed.to(total.dtype)
