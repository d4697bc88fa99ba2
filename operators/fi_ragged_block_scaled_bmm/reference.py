"""PyTorch semantics of FlashInfer's ragged block-scaled FP8 batched GEMM
(tilegym.suites.flashinfer.cutile.gemm.ragged_block_scaled_bmm): A's rows split into segments by
m_indptr; C[s:e] = dequant(A[s:e]) @ dequant(B[q])^T with a_scale per row and 128-wide K block,
b_scale per 128 x 128 block of B[q]."""
import torch

BLOCK = 128


def largest_segment(A, B, a_scale, b_scale, m_indptr):
    """max_m_device: the largest segment, a (1,) int32 tensor."""
    return (m_indptr[1:] - m_indptr[:-1]).max().reshape(1).to(torch.int32)


def _dequant(A, B, a_scale, b_scale):
    a = A.float() * a_scale.repeat_interleave(BLOCK, dim=1)
    b = B.float() * b_scale.repeat_interleave(BLOCK, dim=1).repeat_interleave(BLOCK, dim=2)
    return a, b


def reference(A, B, a_scale, b_scale, m_indptr, max_m_device):
    """A (TOTAL_M, K), B (Q, N, K) float8_e4m3fn; a_scale (TOTAL_M, K / 128), b_scale
    (Q, N / 128, K / 128) fp32; m_indptr (Q + 1,) int32 offsets from 0 to TOTAL_M ->
    C (TOTAL_M, N) fp32."""
    a, b = _dequant(A, B, a_scale, b_scale)
    C = torch.empty(A.shape[0], B.shape[1], dtype=torch.float32, device=A.device)
    bounds = m_indptr.tolist()
    for q in range(B.shape[0]):
        s, e = bounds[q], bounds[q + 1]
        C[s:e] = a[s:e] @ b[q].T
    return C


def torch_impl(A, B, a_scale, b_scale, m_indptr, max_m_device):
    """PyTorch has no block-scaled FP8 GEMM: dequantise to bf16, one cuBLAS GEMM per segment."""
    a, b = _dequant(A, B, a_scale, b_scale)
    a, b = a.to(torch.bfloat16), b.to(torch.bfloat16)
    C = torch.empty(A.shape[0], B.shape[1], dtype=torch.bfloat16, device=A.device)
    bounds = m_indptr.tolist()
    for q in range(B.shape[0]):
        s, e = bounds[q], bounds[q + 1]
        torch.matmul(a[s:e], b[q].T, out=C[s:e])
    return C
