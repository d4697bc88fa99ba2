"""PyTorch semantics of TileGym's SwiGLU (tilegym.ops.cutile.swiglu): c = silu(a) * b, where
silu(a) is computed in fp32 and rounded to a's dtype before the product (swiglu.py:36)."""
import torch
import torch.nn.functional as F


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """c (M, N) from a, b (M, N), f16/bf16/f32."""
    return F.silu(a.float()).to(a.dtype) * b


def swiglu_backward_reference(dc: torch.Tensor, a: torch.Tensor, b: torch.Tensor):
    """(da, db), each (M, N): s = sigmoid(a), db = dc * a * s, da = dc * b * s (1 + a (1 - s)),
    fp32 math rounded to a's dtype."""
    af, bf, dcf = a.float(), b.float(), dc.float()
    s = torch.sigmoid(af)
    return (dcf * bf * s * (1.0 + af * (1.0 - s))).to(a.dtype), (dcf * af * s).to(a.dtype)


def torch_impl(a, b):
    """PyTorch's own native-dtype implementation of the same semantics (ATen kernels), the
    "is either port worth using over torch?" baseline the benchmark times next to both kernels."""
    return F.silu(a) * b


def swiglu_backward_torch(dc, a, b):
    """The backward in native-dtype ATen ops (silu_backward for the gate's gradient)."""
    return torch.ops.aten.silu_backward(dc * b, a), dc * F.silu(a)
