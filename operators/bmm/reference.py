"""PyTorch semantics of bmm (cuBLAS)."""
import torch


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.bmm(a, b)


def torch_impl(a, b):
    """PyTorch's own native-dtype implementation of the same semantics (ATen/cuBLAS kernels), the
    "is either port worth using over torch?" baseline the benchmark times next to both kernels."""
    return torch.bmm(a, b)
