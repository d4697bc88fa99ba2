"""PyTorch semantics of Unsloth's FP8 kernels (tilegym.suites.unsloth.cutile.fp8): 128 x 128
block-scaled float8_e4m3fn weights dequantised (y = x * s[block]) and the block-scaled W8A8
GEMM C = dequant(A) @ dequant(B)^T, As[m, kb] scaling row m of A's K block kb and Bs[nb, kb] a
128 x 128 block of B."""
import torch

BLOCK = 128     # the wrappers' quantisation block (block_size 128, block_size [128, 128])


def _blocks(s, rows, cols):
    """(cdiv(rows, 128), cdiv(cols, 128)) block scales -> one per element of (rows, cols)."""
    return s.repeat_interleave(BLOCK, dim=0)[:rows].repeat_interleave(BLOCK, dim=1)[:, :cols]


def weight_dequant_reference(x, s, *, M, N):
    """x (M, N) float8_e4m3fn, s (cdiv(M, 128), cdiv(N, 128)) fp32 -> y (M, N) fp32 (the kernel
    rounds to y's dtype once; the tolerance covers it)."""
    return x.float() * _blocks(s, M, N)


def reference(A, B, As, Bs):
    """A (M, K), B (N, K) float8_e4m3fn; As (M, cdiv(K, 128)), Bs (cdiv(N, 128), cdiv(K, 128))
    fp32 -> C (M, N) fp32, exact products of the dequantised inputs."""
    K = A.shape[1]
    a = A.float() * As.repeat_interleave(BLOCK, dim=1)[:, :K]
    b = B.float() * _blocks(Bs, B.shape[0], K)
    return a @ b.T


def torch_impl(A, B, As, Bs):
    """PyTorch has no block-scaled FP8 GEMM: dequantise to bf16 and multiply with cuBLAS."""
    K = A.shape[1]
    a = A.float() * As.repeat_interleave(BLOCK, dim=1)[:, :K]
    b = B.float() * _blocks(Bs, B.shape[0], K)
    return torch.matmul(a.to(torch.bfloat16), b.to(torch.bfloat16).T)
