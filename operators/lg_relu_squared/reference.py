"""PyTorch semantics of Liger's ReLU-squared (tilegym.suites.liger.cutile.relu_squared):
y = relu(x)^2, dx = 2 dy relu(x), in fp32 rounded to x's dtype."""
import torch


def reference(x):
    """y (n_rows, n_cols) in x's dtype."""
    r = torch.clamp_min(x.float(), 0.0)
    return (r * r).to(x.dtype)


def torch_impl(x):
    """Native-dtype ATen ops (the benchmark's torch baseline)."""
    return torch.relu(x).square()


def relu_squared_backward_reference(dy, x):
    """dx (n_rows, n_cols) = dy * 2 relu(x) in x's dtype."""
    return (dy.float() * 2.0 * torch.clamp_min(x.float(), 0.0)).to(x.dtype)


def relu_squared_backward_torch(dy, x):
    """Native-dtype ATen ops."""
    return dy * 2 * torch.relu(x)
