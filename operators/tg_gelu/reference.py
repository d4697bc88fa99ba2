"""PyTorch semantics of TileGym's GELU (tilegym.ops.cutile.activation.gelu).

Both modes of the forward are the tanh approximation of GELU,
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): APPROXIMATE 1 evaluates it with tanh, 0 (named
'none' by TileGym, whose docstring promises x * Phi(x)) with tanh(u) = 2 sigmoid(2u) - 1. The
backward of mode 1 is that function's derivative; the backward of mode 0 is
Phi_tanh(x) + x * phi(x): the tanh CDF plus x times the exact normal density. The kernels'
APPROXIMATE reaches these functions as a keyword (the variant's constexpr)."""
import math

import torch
import torch.nn.functional as F

_K = math.sqrt(2.0 / math.pi)
_C = 0.044715


def _cdf_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * (1.0 + torch.tanh(_K * (x + _C * x * x * x)))


def reference(x: torch.Tensor) -> torch.Tensor:
    """y = x * Phi_tanh(x) for both modes (x: any shape, f16/bf16/f32), computed in fp32 and
    rounded to x's dtype."""
    xf = x.float()
    return (xf * _cdf_tanh(xf)).to(x.dtype)


def gelu_backward_reference(dy: torch.Tensor, x: torch.Tensor, *, APPROXIMATE: int) -> torch.Tensor:
    """dx = dy * d(x) with d the derivative of the tanh GELU (mode 1) or
    Phi_tanh(x) + x * exp(-x^2 / 2) / sqrt(2 pi) (mode 0), fp32 math, rounded to x's dtype."""
    xf, dyf = x.float(), dy.float()
    if APPROXIMATE == 1:
        t = torch.tanh(_K * (xf + _C * xf ** 3))
        d = 0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * _K * (1.0 + 3.0 * _C * xf * xf)
    else:
        d = _cdf_tanh(xf) + xf * torch.exp(-0.5 * xf * xf) / math.sqrt(2.0 * math.pi)
    return (dyf * d).to(x.dtype)


def torch_impl(x, *, APPROXIMATE):
    """PyTorch's own native-dtype GELU (ATen), the "is either port worth using over torch?"
    baseline the benchmark times next to both kernels (mode 0 is erf GELU there)."""
    return F.gelu(x, approximate="tanh" if APPROXIMATE == 1 else "none")


def gelu_backward_torch(dy, x, *, APPROXIMATE):
    """ATen's GELU backward in the native dtype: the timing baseline of the backward kernel."""
    return torch.ops.aten.gelu_backward(dy, x, approximate="tanh" if APPROXIMATE == 1 else "none")
