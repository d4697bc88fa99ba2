"""PyTorch semantics of TileGym's SiLU-and-mul (tilegym.ops.cutile.silu_and_mul):
x = [a | b] on the last dim, y = silu(a) * b, math in fp32."""
import torch
import torch.nn.functional as F


def reference(input: torch.Tensor) -> torch.Tensor:
    a, b = input.float().chunk(2, dim=-1)
    return (F.silu(a) * b).to(input.dtype)


def torch_impl(input):
    """PyTorch's own native-dtype implementation of the same semantics (ATen kernels), the
    "is either port worth using over torch?" baseline the benchmark times next to both kernels."""
    a, b = input.chunk(2, dim=-1)
    return F.silu(a) * b
