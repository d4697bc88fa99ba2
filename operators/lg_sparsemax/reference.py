"""PyTorch semantics of Liger's sparsemax (tilegym.suites.liger.cutile.sparsemax): the
Euclidean projection of each row onto the simplex, y = max(x - tau, 0), in fp32 rounded to x's
dtype; the backward dx = [y > 0] (dy - mean of dy over the support)."""
import torch


def sorted_rows(x):
    """The wrapper's input to the forward kernel: each row of x in fp32, descending."""
    return torch.sort(x.float(), dim=-1, descending=True).values


def reference(x, x_sorted):
    """y (n_rows, N_COLS) in x's dtype (x_sorted: sorted_rows(x))."""
    z = x_sorted.float()
    n = z.shape[-1]
    r = torch.arange(1, n + 1, dtype=torch.float32, device=z.device)
    cssv = z.cumsum(-1)
    support = z > (cssv - 1.0) / r
    k = support.sum(-1, keepdim=True).clamp_min(1).float()
    s = torch.where(support, z, 0.0).sum(-1, keepdim=True)
    tau = (s - 1.0) / k
    return torch.clamp_min(x.float() - tau, 0.0).to(x.dtype)


def torch_impl(x, x_sorted):
    """The same steps in ATen ops (the benchmark's torch baseline; torch has no sparsemax)."""
    return reference(x, x_sorted)


def sparsemax_backward_reference(y_in, dy):
    """dx (n_rows, N_COLS) in dy's dtype: [y > 0] (dy - sum(dy [y > 0]) / (count + 1e-6))."""
    supp = (y_in.float() > 0).float()
    dyf = dy.float()
    mean = (supp * dyf).sum(-1, keepdim=True) / (supp.sum(-1, keepdim=True) + 1e-6)
    return (supp * (dyf - mean)).to(dy.dtype)
