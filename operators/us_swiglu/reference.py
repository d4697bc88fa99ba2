"""PyTorch semantics of Unsloth's SwiGLU (tilegym.suites.unsloth.cutile.swiglu):
h = f * g with f = silu(e) in fp32 rounded to g's dtype; the backward's h, df = dw * f,
de = (dw * g) * silu'(e) (silu' in fp32), with each dtype product rounded as written."""
import torch
import torch.nn.functional as F


def reference(e, g):
    """h (T, H) in g's dtype."""
    f = F.silu(e.float()).to(g.dtype)
    return f * g


def torch_impl(e, g):
    """Native-dtype ATen ops (the benchmark's torch baseline)."""
    return F.silu(e) * g


def swiglu_backward_reference(dw, e, g):
    """(h, df, de), each (T, H) in dw's dtype."""
    ef = e.float()
    se = torch.sigmoid(ef)
    f32 = se * ef
    f = f32.to(dw.dtype)
    h = f * g
    df = dw * f
    dg = dw * g
    de = (dg.float() * (se + f32 * (1.0 - se))).to(dw.dtype)
    return h, df, de


def swiglu_backward_torch(dw, e, g):
    """The same products in native-dtype ATen ops."""
    se = torch.sigmoid(e)
    f = se * e
    return f * g, dw * f, dw * g * (se + f * (1 - se))
