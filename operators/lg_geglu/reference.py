"""PyTorch semantics of Liger's GEGLU (tilegym.suites.liger.cutile.geglu): c = gelu_tanh(a) * b
with the GELU in fp32 rounded to b's dtype before a product in that dtype; the backward's
db = dc * gelu(a) (the rounded gelu), da = (dc * b, a dtype product) * gelu'(a) in fp32."""
import math

import torch
import torch.nn.functional as F

_K = math.sqrt(2.0 / math.pi)
_C = 0.044715


def _gelu_parts(a):
    t = torch.tanh(_K * (a + _C * a * a * a))
    return 0.5 * a * (1.0 + t), t


def reference(a, b):
    """c (n_rows, n_cols) in b's dtype."""
    g, _ = _gelu_parts(a.float())
    return g.to(b.dtype) * b


def torch_impl(a, b):
    """Native-dtype ATen ops (the benchmark's torch baseline)."""
    return F.gelu(a, approximate="tanh") * b


def geglu_backward_reference(dc, a, b):
    """(da, db), each (n_rows, n_cols) in the inputs' dtype."""
    af = a.float()
    g, t = _gelu_parts(af)
    db = dc.float() * g.to(dc.dtype).float()
    grad = 0.5 * (1.0 + t) + 0.5 * af * ((1.0 - t) * (1.0 + t)) * (_K * (1.0 + 3.0 * _C * af * af))
    da = (dc * b).float() * grad
    return da.to(a.dtype), db.to(dc.dtype)


def geglu_backward_torch(dc, a, b):
    """The same through torch.autograd in the native dtype."""
    ar, br = a.detach().requires_grad_(), b.detach().requires_grad_()
    c = F.gelu(ar, approximate="tanh") * br
    return torch.autograd.grad(c, (ar, br), dc)
