"""PyTorch semantics of gelu (tanh form)."""
import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x.float(), approximate="tanh").to(x.dtype)
