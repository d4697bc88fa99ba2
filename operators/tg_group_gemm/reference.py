"""PyTorch semantics of TileGym's grouped GEMM (tilegym.ops.cutile.group_gemm).

C_g = A_g @ B_g for every group g; a launch with TRANSPOSE_B gets transposed copies of the same
B_g (the manifest's bind), so the products are the same for every variant.
"""
import torch


def reference(As: list, Bs: list) -> list:
    """As: G tensors (M_g, K); Bs: G tensors (K, N) -> G tensors (M_g, N) in A's dtype (fp32
    products, one rounding)."""
    return [(a.float() @ b.float()).to(a.dtype) for a, b in zip(As, Bs)]


def torch_impl(As, Bs):
    """PyTorch's native-dtype GEMM per group (cuBLAS, one launch per group)."""
    return [torch.matmul(a, b) for a, b in zip(As, Bs)]
