"""PyTorch semantics of TileGym's ReLU forward (tilegym.ops.cutile.activation.relu)."""
import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x.float()).to(x.dtype)


def torch_impl(x):
    """PyTorch's own native-dtype implementation of the same semantics (ATen kernels), the
    "is either port worth using over torch?" baseline the benchmark times next to both kernels."""
    return torch.relu(x)
