"""PyTorch semantics of matmul (cuBLAS)."""
import torch


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b
