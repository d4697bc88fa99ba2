"""PyTorch semantics of FlashInfer's ragged batched GEMM
(tilegym.suites.flashinfer.cutile.gemm.ragged_bmm): A's rows split into segments by m_indptr,
C[s:e] = A[s:e] @ B[q] for segment q = [m_indptr[q], m_indptr[q + 1])."""
import torch


def largest_segment(A, B, m_indptr):
    """max_m_device: the largest segment, a (1,) int32 tensor."""
    return (m_indptr[1:] - m_indptr[:-1]).max().reshape(1).to(torch.int32)


def reference(A, B, m_indptr, max_m_device):
    """A (TOTAL_M, K), B (Q, K, N) f16 / bf16, m_indptr (Q + 1,) int32 offsets from 0 to
    TOTAL_M -> C (TOTAL_M, N) fp32."""
    C = torch.empty(A.shape[0], B.shape[2], dtype=torch.float32, device=A.device)
    bounds = m_indptr.tolist()
    for q in range(B.shape[0]):
        s, e = bounds[q], bounds[q + 1]
        C[s:e] = A[s:e].float() @ B[q].float()
    return C


def torch_impl(A, B, m_indptr, max_m_device):
    """One cuBLAS GEMM per segment in the input dtype (torch has no ragged GEMM)."""
    C = torch.empty(A.shape[0], B.shape[2], dtype=A.dtype, device=A.device)
    bounds = m_indptr.tolist()
    for q in range(B.shape[0]):
        s, e = bounds[q], bounds[q + 1]
        torch.matmul(A[s:e], B[q], out=C[s:e])
    return C
