"""PyTorch semantics of Qwen3.5's fused attention output gate (the wheel's FlashInfer-Bench
definition qwen3_5_sigmoid_mul): output = x * sigmoid(gate), elementwise over (N, D)."""
import torch


def reference(x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """x times the logistic function of gate, computed in fp32 and rounded once to x's dtype."""
    xf, gf = x.float(), gate.float()
    return (xf * torch.sigmoid(gf)).to(x.dtype)


def torch_impl(x, gate):
    """The same in native-dtype ATen ops (the definition's own formulation), timed as torch."""
    return x * torch.sigmoid(gate)
