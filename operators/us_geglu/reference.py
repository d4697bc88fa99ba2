"""PyTorch semantics of Unsloth's GEGLU (tilegym.suites.unsloth.cutile.geglu): h = f * g with
f = gelu(e) in fp32 (exact: erf; approximate: tanh) rounded to g's dtype; the backward's
h, df = dw * f, de = (dw * g) * gelu'(e) (gelu' in fp32), each dtype product rounded as
written."""
import math

import torch
import torch.nn.functional as F

_K = math.sqrt(2.0 / math.pi)
_C = 0.044715


def _gelu_and_grad(e, exact):
    if exact:
        cdf = 0.5 * (1.0 + torch.erf(e / math.sqrt(2.0)))
        return e * cdf, cdf + e * torch.exp(-0.5 * e * e) / math.sqrt(2.0 * math.pi)
    t = torch.tanh(_K * e * (1.0 + _C * e * e))
    grad = 0.5 * (1.0 + t) + 0.5 * e * (1.0 - t * t) * _K * (1.0 + 3.0 * _C * e * e)
    return 0.5 * e * (1.0 + t), grad


def _forward(e, g, exact):
    f, _ = _gelu_and_grad(e.float(), exact)
    return f.to(g.dtype) * g


def _backward(dw, e, g, exact):
    f32, grad = _gelu_and_grad(e.float(), exact)
    f = f32.to(dw.dtype)
    dg = dw * g
    return f * g, dw * f, (dg.float() * grad).to(dw.dtype)


def geglu_exact_reference(e, g):
    """h (T, H) in g's dtype, erf GELU."""
    return _forward(e, g, True)


def geglu_approx_reference(e, g):
    """h (T, H) in g's dtype, tanh GELU."""
    return _forward(e, g, False)


def geglu_exact_backward_reference(dw, e, g):
    """(h, df, de), each (T, H) in dw's dtype, erf GELU."""
    return _backward(dw, e, g, True)


def geglu_approx_backward_reference(dw, e, g):
    """(h, df, de), each (T, H) in dw's dtype, tanh GELU."""
    return _backward(dw, e, g, False)


def geglu_exact_torch(e, g):
    """Native-dtype ATen ops (the benchmark's torch baseline)."""
    return F.gelu(e) * g


def geglu_approx_torch(e, g):
    """Native-dtype ATen ops (the benchmark's torch baseline)."""
    return F.gelu(e, approximate="tanh") * g


def geglu_exact_backward_torch(dw, e, g):
    """The backward's products and ATen's gelu_backward in the native dtype."""
    f = F.gelu(e)
    return f * g, dw * f, torch.ops.aten.gelu_backward(dw * g, e)


def geglu_approx_backward_torch(dw, e, g):
    """The backward's products and ATen's gelu_backward (tanh) in the native dtype."""
    f = F.gelu(e, approximate="tanh")
    return f * g, dw * f, torch.ops.aten.gelu_backward(dw * g, e, approximate="tanh")
