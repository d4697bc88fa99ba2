"""PyTorch semantics of Liger's PolyNorm (tilegym.suites.liger.cutile.poly_norm):
y = w0 x^3 r3 + w1 x^2 r2 + w2 x r1 + b in fp32 with r_p = 1 / sqrt(mean(x^(2p)) + eps) per
row, y rounded to x's dtype, the r_p stored in fp32. The backward, per row and power p with
S_p = sum(dy x^p): dx = sum_p w_p p (x^(p-1) r_p dy - x^(2p-1) r_p^3 S_p / n) (w0 with p 3, w1
with p 2, w2 with p 1), and over all rows dW_p = sum r_p S_p, dB = sum dy, in fp32."""
import torch

EPS = 1.0e-6  # Liger's default eps, the forward's bind


def _rstd(x, p, eps):
    """1 / sqrt(mean(x^(2p)) + eps) per row of fp32 x."""
    return torch.rsqrt((x ** (2 * p)).mean(-1) + eps)


def reference(x_input, weights, bias, *, eps):
    """(y (n_rows, N) in x's dtype, rstd3, rstd2, rstd1 (n_rows,) fp32)."""
    x = x_input.float()
    w = weights.float()
    r3, r2, r1 = _rstd(x, 3, eps), _rstd(x, 2, eps), _rstd(x, 1, eps)
    y = w[0] * x ** 3 * r3[:, None] + w[1] * x * x * r2[:, None] + w[2] * x * r1[:, None] + bias.float()
    return y.to(x_input.dtype), r3, r2, r1


torch_impl = reference


def poly_rstd3(dy, x_input, weights, *rest):
    """The forward's rstd of x^3 for the backward's inputs (fp32, (n_rows,))."""
    return _rstd(x_input.float(), 3, EPS)


def poly_rstd2(dy, x_input, weights, *rest):
    """The forward's rstd of x^2 (fp32, (n_rows,))."""
    return _rstd(x_input.float(), 2, EPS)


def poly_rstd1(dy, x_input, weights, *rest):
    """The forward's rstd of x (fp32, (n_rows,))."""
    return _rstd(x_input.float(), 1, EPS)


def poly_norm_bwd_reference(dy, x_input, weights, rstd3, rstd2, rstd1):
    """(dx (n_rows, N) in dy's dtype, dwdb (4,) fp32 = [dW0, dW1, dW2, dB])."""
    x, g, w = x_input.float(), dy.float(), weights.float()
    n = x.shape[-1]
    dx = torch.zeros_like(x)
    dwdb = []
    for wp, p, r in ((w[0], 3, rstd3), (w[1], 2, rstd2), (w[2], 1, rstd1)):
        r = r.float()[:, None]
        s = (g * x ** p).sum(-1, keepdim=True)
        dx = dx + wp * p * (x ** (p - 1) * r * g - x ** (2 * p - 1) * r ** 3 * s / n)
        dwdb.append((r * s).sum())
    dwdb.append(g.sum())
    return dx.to(dy.dtype), torch.stack(dwdb)
