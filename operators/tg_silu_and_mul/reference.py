"""PyTorch semantics of TileGym's SiLU-and-mul (tilegym.ops.cutile.silu_and_mul):
x = [a | b] on the last dim, y = silu(a) * b, math in fp32."""
import torch
import torch.nn.functional as F


def reference(input: torch.Tensor) -> torch.Tensor:
    a, b = input.float().chunk(2, dim=-1)
    return (F.silu(a) * b).to(input.dtype)


def silu_and_mul_backward_reference(grad_output: torch.Tensor, input: torch.Tensor):
    """(grad_a, grad_b), each (M, H), from grad_output dc (M, H) and input (M, 2 H):
    grad_a = dc * b * s * (1 + a (1 - s)) with s = sigmoid(a), grad_b = dc * silu(a); fp32
    math rounded to the input dtype."""
    a, b = input.float().chunk(2, dim=-1)
    dc = grad_output.float()
    s = torch.sigmoid(a)
    return ((dc * b * (s + a * s * (1.0 - s))).to(input.dtype), (dc * a * s).to(input.dtype))


def torch_impl(input):
    """PyTorch's own native-dtype implementation of the same semantics (ATen kernels), the
    "is either port worth using over torch?" baseline the benchmark times next to both kernels."""
    a, b = input.chunk(2, dim=-1)
    return F.silu(a) * b


def silu_and_mul_backward_torch(grad_output, input):
    """The backward in native-dtype ATen ops (silu_backward for the gate's gradient)."""
    a, b = input.chunk(2, dim=-1)
    return torch.ops.aten.silu_backward(grad_output * b, a), grad_output * F.silu(a)
