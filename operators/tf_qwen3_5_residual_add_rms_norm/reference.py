"""PyTorch semantics of Qwen3.5's residual add followed by a Gemma-style RMSNorm (the wheel's
FlashInfer-Bench definition qwen3_5_residual_add_gemma_rms_norm). Per row of D values:
sum = residual + x (rounded to the input dtype, as the model keeps it), then
normed = sum * 1 / sqrt(mean(sum^2) + eps) * (offset + weight), in fp32, rounded once."""
import torch


def reference(residual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, *, eps: float, offset: float):
    """(sum, normed), both (N, D) in the inputs' dtype."""
    total = residual + x
    t = total.float()
    inv_rms = 1.0 / torch.sqrt((t * t).mean(dim=-1, keepdim=True) + eps)
    normed = t * inv_rms * (offset + weight.float())
    return total, normed.to(total.dtype)


def torch_impl(residual, x, weight, *, eps, offset):
    """The same with ATen's fused rms_norm (native dtype in, fp32 weight), timed as torch."""
    total = residual + x
    normed = torch.nn.functional.rms_norm(total.float(), (total.shape[-1],), offset + weight.float(), eps)
    return total, normed.to(total.dtype)
