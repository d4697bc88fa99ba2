"""PyTorch semantics of FlashInfer's GEMM with alpha / beta
(tilegym.suites.flashinfer.cutile.gemm.gemm_alpha_beta): C = alpha A @ B + beta C, C updated in
place, fp32 accumulation."""
import torch


def reference(A, B, C_in, *, alpha, beta):
    """A (M, K), B (K, N), C_in (M, N) f16 / bf16; alpha, beta fp32 -> C (M, N) fp32 (the kernel
    rounds to C's dtype once)."""
    return alpha * (A.float() @ B.float()) + beta * C_in.float()


def torch_impl(A, B, C_in, *, alpha, beta):
    """cuBLAS through torch.addmm: beta C + alpha A @ B in the input dtype."""
    return torch.addmm(C_in, A, B, beta=beta, alpha=alpha)
