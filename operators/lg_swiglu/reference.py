"""PyTorch semantics of Liger's SwiGLU (tilegym.suites.liger.cutile.swiglu):
c = silu(a * g) * b, silu in fp32 rounded to b's dtype before the product; the backward's
db = dc * silu(a g), da = dc * (silu (1 - sig) + sig) * b * g in fp32, each rounded once."""
import torch
import torch.nn.functional as F


def reference(a, b, *, gate_multiplier):
    """c (n_rows, n_cols) in a's dtype."""
    s = F.silu(a.float() * gate_multiplier).to(b.dtype)
    return (s.float() * b.float()).to(b.dtype)


def torch_impl(a, b, *, gate_multiplier):
    """Native-dtype ATen ops (the benchmark's torch baseline)."""
    return F.silu(a * gate_multiplier) * b


def swiglu_backward_reference(dc, a, b, *, gate_multiplier):
    """(da, db), each (n_rows, n_cols) in a's / b's dtype."""
    x = a.float() * gate_multiplier
    sig = torch.sigmoid(x)
    silu = x * sig
    dcf = dc.float()
    db = dcf * silu
    da = dcf * (silu * (1.0 - sig) + sig) * b.float() * gate_multiplier
    return da.to(a.dtype), db.to(b.dtype)


def swiglu_backward_torch(dc, a, b, *, gate_multiplier):
    """The same through torch.autograd in the native dtype."""
    ar, br = a.detach().requires_grad_(), b.detach().requires_grad_()
    c = F.silu(ar * gate_multiplier) * br
    return torch.autograd.grad(c, (ar, br), dc)
