"""PyTorch semantics of Liger's softmax (tilegym.suites.liger.cutile.softmax): y = softmax(x)
over the last dim in fp32, rounded to x's dtype; the backward dx = y * (dy - sum(y * dy))."""
import torch


def reference(x):
    """y (n_rows, n_cols) in x's dtype."""
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def torch_impl(x):
    """ATen's softmax in the native dtype (the benchmark's torch baseline)."""
    return torch.softmax(x, dim=-1)


def softmax_backward_reference(dy, y):
    """dx (n_rows, n_cols) in dy's dtype, fp32 math."""
    yf, dyf = y.float(), dy.float()
    dot = (yf * dyf).sum(-1, keepdim=True)
    return (yf * (dyf - dot)).to(dy.dtype)


def softmax_backward_torch(dy, y):
    """ATen's softmax backward in the native dtype."""
    return torch._softmax_backward_data(dy, y, -1, y.dtype)
