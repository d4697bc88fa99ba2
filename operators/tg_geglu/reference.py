"""PyTorch semantics of TileGym's GEGLU (tilegym.ops.cutile.activation.geglu): x = [a | b] on
the last dim, y = a * gelu(b).

Both APPROXIMATE modes of the forward are the tanh GELU 0.5 b (1 + tanh(sqrt(2/pi) (b +
0.044715 b^3))) (mode 0, 'none', evaluates it through an exp-based sigmoid). The backward
differentiates it exactly in mode 1 and as Phi_tanh(b) + b * phi(b) (tanh CDF, exact normal
density) in mode 0; APPROXIMATE reaches these functions as a keyword (the variant's
constexpr)."""
import math

import torch
import torch.nn.functional as F

_K = math.sqrt(2.0 / math.pi)
_C = 0.044715


def _gelu_tanh(b: torch.Tensor) -> torch.Tensor:
    return 0.5 * b * (1.0 + torch.tanh(_K * (b + _C * b * b * b)))


def _gelu_grad(b: torch.Tensor, approximate: int) -> torch.Tensor:
    t = torch.tanh(_K * (b + _C * b * b * b))
    if approximate == 1:
        return 0.5 * (1.0 + t) + 0.5 * b * (1.0 - t * t) * _K * (1.0 + 3.0 * _C * b * b)
    return 0.5 * (1.0 + t) + b * torch.exp(-0.5 * b * b) / math.sqrt(2.0 * math.pi)


def reference(x: torch.Tensor) -> torch.Tensor:
    """y (M, H) from x (M, 2 H), f16/bf16/f32: fp32 math rounded to x's dtype."""
    a, b = x.float().chunk(2, dim=-1)
    return (a * _gelu_tanh(b)).to(x.dtype)


def geglu_backward_reference(dy: torch.Tensor, x: torch.Tensor, *, APPROXIMATE: int) -> torch.Tensor:
    """dx (M, 2 H) = [dy * gelu(b) | dy * a * gelu'(b)] from dy (M, H) and x (M, 2 H)."""
    a, b = x.float().chunk(2, dim=-1)
    dyf = dy.float()
    return torch.cat([dyf * _gelu_tanh(b), dyf * a * _gelu_grad(b, APPROXIMATE)], dim=-1).to(x.dtype)


def torch_impl(x, *, APPROXIMATE):
    """PyTorch's own native-dtype implementation of the same semantics (ATen kernels), the
    "is either port worth using over torch?" baseline the benchmark times next to both kernels
    (mode 0 is erf GELU there)."""
    a, b = x.chunk(2, dim=-1)
    return a * F.gelu(b, approximate="tanh" if APPROXIMATE == 1 else "none")


def geglu_backward_torch(dy, x, *, APPROXIMATE):
    """The backward in native-dtype ATen ops: da = dy * gelu(b), db = dy * a * gelu'(b)."""
    a, b = x.chunk(2, dim=-1)
    mode = "tanh" if APPROXIMATE == 1 else "none"
    return torch.cat([dy * F.gelu(b, approximate=mode),
                      torch.ops.aten.gelu_backward(dy * a, b, approximate=mode)], dim=-1)
