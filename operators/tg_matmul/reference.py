"""PyTorch semantics of TileGym's GEMM (tilegym.ops.cutile.matmul): C = A @ B.

Both kernels accumulate in fp32 and round once to the input dtype; transposed launches
(TRANSPOSE_A / TRANSPOSE_B) receive transposed copies of the same A and B (the manifest's
bind), so the product is the same for every variant.
"""
import torch


def reference(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """A (M, K), B (K, N) in f16 / bf16 / f32 -> C (M, N) in A's dtype; fp32 product (no tf32)."""
    return (A.float() @ B.float()).to(A.dtype)


def torch_impl(A, B):
    """PyTorch's native-dtype GEMM (cuBLAS), the baseline timed next to the kernels."""
    return torch.matmul(A, B)
