"""PyTorch semantics of Qwen3.5's SiLU-and-mul on separate gate and up tensors (the wheel's
FlashInfer-Bench definition qwen3_5_silu_and_mul_separate): output = silu(gate) * up over (N, D)."""
import torch
import torch.nn.functional as F


def reference(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """gate * sigmoid(gate) * up in fp32, rounded once to gate's dtype."""
    g, u = gate.float(), up.float()
    return (F.silu(g) * u).to(gate.dtype)


def torch_impl(gate, up):
    """The same in native-dtype ATen ops (the definition's own formulation), timed as torch."""
    return F.silu(gate) * up
