"""PyTorch semantics of TileGym's batched GEMM (tilegym.ops.cutile.bmm): C[q] = A[q] @ B[q].

Transposed launches (TRANSPOSE_A / TRANSPOSE_B) receive transposed copies of the same A and B
(the manifest's bind), so the product is the same for every variant.
"""
import torch


def reference(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """A (Q, M, K), B (Q, K, N) -> C (Q, M, N) in A's dtype; fp32 product, one rounding."""
    return torch.bmm(A.float(), B.float()).to(A.dtype)


def torch_impl(A, B):
    """PyTorch's native-dtype batched GEMM (cuBLAS), the baseline timed next to the kernels."""
    return torch.bmm(A, B)
