"""PyTorch semantics of Qwen3.5's gated-delta-rule gate preprocessing (the wheel's FlashInfer-Bench
definition qwen3_5_gdr_preprocess): beta = logistic(b) in b's dtype, and the float32 decay
g = -exp(A_log) * log(1 + exp(a + dt_bias)), elementwise over (N, H) with (H,) parameters."""
import torch
import torch.nn.functional as F


def reference(b: torch.Tensor, a: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor):
    """(beta, g): beta (N, H) in b's dtype, g (N, H) float32."""
    beta = torch.sigmoid(b.float()).to(b.dtype)
    g = -torch.exp(A_log.float()) * F.softplus(a.float() + dt_bias.float())
    return beta, g


def torch_impl(b, a, A_log, dt_bias):
    """The same in ATen ops with b's own dtype for the sigmoid, timed as torch."""
    return b.sigmoid(), -A_log.float().exp() * F.softplus(a.float() + dt_bias)
