"""PyTorch semantics of TileGym's GEGLU forward with the tanh GELU
(tilegym.ops.cutile.activation.geglu): x = [a | b] on the last dim, y = a * gelu_tanh(b)."""
import torch
import torch.nn.functional as F


def reference(x: torch.Tensor) -> torch.Tensor:
    a, b = x.float().chunk(2, dim=-1)
    return (a * F.gelu(b, approximate="tanh")).to(x.dtype)


def torch_impl(x):
    """PyTorch's own native-dtype implementation of the same semantics (ATen kernels), the
    "is either port worth using over torch?" baseline the benchmark times next to both kernels."""
    a, b = x.chunk(2, dim=-1)
    return a * F.gelu(b, approximate="tanh")
