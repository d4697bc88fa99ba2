"""PyTorch semantics of OLMo3's RMSNorm followed by the residual add (the wheel's FlashInfer-Bench
definition olmo3_rms_norm_residual_add): per row of D values, residual + x / sqrt(mean(x^2) + eps)
* weight, in fp32, rounded once to residual's dtype."""
import torch


def reference(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, *, eps: float):
    f = x.float()
    inv_rms = 1.0 / torch.sqrt((f * f).mean(dim=-1, keepdim=True) + eps)
    return (residual.float() + f * inv_rms * weight.float()).to(residual.dtype)


def torch_impl(x, residual, weight, *, eps):
    """The same with ATen's fused rms_norm (fp32 math), timed as torch."""
    normed = torch.nn.functional.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps)
    return (residual.float() + normed).to(residual.dtype)
