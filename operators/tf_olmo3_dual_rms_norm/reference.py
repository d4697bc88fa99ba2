"""PyTorch semantics of OLMo3's query / key RMSNorm done in one call (the wheel's
FlashInfer-Bench definition olmo3_dual_rms_norm): each of q and k (N, D) is scaled per row by
1 / sqrt(mean(row^2) + eps) and by its own weight (D,), in fp32, rounded once to its dtype.
The kernel writes the results over q and k; here they are returned as new tensors."""
import torch


def _rms_scaled(t: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    f = t.float()
    inv_rms = 1.0 / torch.sqrt((f * f).mean(dim=-1, keepdim=True) + eps)
    return (f * inv_rms * w.float()).to(t.dtype)


def reference(q: torch.Tensor, k: torch.Tensor, q_weight: torch.Tensor, k_weight: torch.Tensor, *, eps: float):
    """(q_out, k_out), each (N, D) in the inputs' dtype."""
    return _rms_scaled(q, q_weight, eps), _rms_scaled(k, k_weight, eps)


def torch_impl(q, k, q_weight, k_weight, *, eps):
    """The same with ATen's fused rms_norm per tensor (fp32 math), timed as torch."""
    d = q.shape[-1]
    rms = torch.nn.functional.rms_norm
    return (rms(q.float(), (d,), q_weight.float(), eps).to(q.dtype),
            rms(k.float(), (d,), k_weight.float(), eps).to(k.dtype))
