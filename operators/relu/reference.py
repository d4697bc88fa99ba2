"""PyTorch semantics of relu (for the GPU correctness stage)."""
import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)
