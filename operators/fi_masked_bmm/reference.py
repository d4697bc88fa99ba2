"""PyTorch semantics of FlashInfer's masked batched GEMM
(tilegym.suites.flashinfer.cutile.gemm.masked_bmm): C[q] = A[q] @ B[q] on every BLOCK_M-row tile
whose first row is below masked_m[q]; the other rows are not written (zero here, the output's
initial value)."""
import torch


def _masked(C, masked_m, BLOCK_M):
    rows = torch.arange(C.shape[1], device=C.device)
    written = (rows // BLOCK_M * BLOCK_M)[None, :] < masked_m.long()[:, None]   # (Q, M)
    return torch.where(written[..., None], C, torch.zeros_like(C))


def reference(A, B, masked_m, *, BLOCK_M):
    """A (Q, M, K), B (Q, K, N) f16 / bf16, masked_m (Q,) int32 -> C (Q, M, N) fp32."""
    return _masked(torch.bmm(A.float(), B.float()), masked_m, BLOCK_M)


def torch_impl(A, B, masked_m, *, BLOCK_M):
    """cuBLAS's batched GEMM on every batch in the input dtype, the unwritten tiles zeroed."""
    return _masked(torch.bmm(A, B), masked_m, BLOCK_M)
