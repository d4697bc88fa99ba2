"""PyTorch semantics of TileGym's block-scaled W8A8 FP8 GEMM
(tilegym.ops.cutile.fp8_quantization_matmul): C = dequant(A) @ dequant(B)^T, where A's scale
As[m, kb] covers row m and K block kb (128 wide) and B's scale Bs[nb, kb] covers a 128 x 128
block of B."""
import torch

BLOCK = 128     # the wrapper's default block_size [128, 128]


def _dequant(A, As, B, Bs):
    K = A.shape[1]
    a = A.float() * As.repeat_interleave(BLOCK, dim=1)[:, :K]
    b = B.float() * Bs.repeat_interleave(BLOCK, dim=0)[:B.shape[0]].repeat_interleave(BLOCK, dim=1)[:, :K]
    return a, b


def reference(A: torch.Tensor, B: torch.Tensor, As: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
    """A (M, K), B (N, K) float8_e4m3fn; As (M, cdiv(K, 128)), Bs (cdiv(N, 128), cdiv(K, 128))
    fp32 -> C (M, N) fp32 (the kernel rounds to f16 / bf16 once at the end; the tolerance
    covers that rounding)."""
    a, b = _dequant(A, As, B, Bs)
    return a @ b.T


def torch_impl(A, B, As, Bs):
    """PyTorch has no block-scaled FP8 GEMM: dequantise to bf16 and multiply with cuBLAS
    (the path one takes without a fused kernel)."""
    a, b = _dequant(A, As, B, Bs)
    return torch.matmul(a.to(torch.bfloat16), b.to(torch.bfloat16).T)
