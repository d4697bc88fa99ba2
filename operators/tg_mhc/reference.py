"""PyTorch semantics of TileGym's mHC kernels (tilegym.ops.cutile.experimental.mhc).

N is the expansion rate n, y's columns are [pre (N) | post (N) | res (N * N)]. Keyword-only
parameters are the call's constexprs, shape names and hints (the GPU harness passes them).
"""
import math

import torch


def _splits(K: int, TILE_SIZE_K: int, SPLIT_K: int):
    """The K ranges of the SPLIT_K splits as the kernel cuts them (whole TILE_SIZE_K tiles)."""
    k_tiles = math.ceil(K / TILE_SIZE_K)
    per = math.ceil(k_tiles / SPLIT_K)
    for s in range(SPLIT_K):
        lo, hi = s * per, min((s + 1) * per, k_tiles)
        yield min(lo * TILE_SIZE_K, K), min(max(hi, lo) * TILE_SIZE_K, K)


def split_gemm_rms_reference(X, W, *, SPLIT_K, TILE_SIZE_K, TILE_SIZE_N):
    """X (M, K), W (K, Nc) -> Y_acc (M * SPLIT_K, Nc): split s's partial X[:, ks] @ W[ks] in
    rows [s M, (s + 1) M); R_acc (M * SPLIT_K, cdiv(Nc, TILE_SIZE_N)): split s's sum of X[:, ks]^2
    per row, the same in every column (one per N block). fp32."""
    M, K = X.shape
    nblk = math.ceil(W.shape[1] / TILE_SIZE_N)
    ys, rs = [], []
    for lo, hi in _splits(K, TILE_SIZE_K, SPLIT_K):
        x = X[:, lo:hi].float()
        ys.append(x @ W[lo:hi].float())
        rs.append((x * x).sum(dim=1, keepdim=True).expand(M, nblk))
    return torch.cat(ys), torch.cat(rs)


def split_gemm_rms_torch(X, W, *, SPLIT_K, TILE_SIZE_K, TILE_SIZE_N):
    """What PyTorch computes without a split-K stage: one GEMM and one sum of squares in the
    input dtype (a different layout from the kernel's partials: a timing baseline only)."""
    return X @ W, (X * X).sum(dim=1, keepdim=True)


def finalize_reference(Y_acc, R_acc, Bias, *, N, C, SPLIT_K, TILE_SIZE_N, alpha_pre, alpha_post, alpha_res):
    """Y_acc (M * SPLIT_K, Nc), R_acc (M * SPLIT_K, cdiv(Nc, TILE_SIZE_N)) fp32 partials, Bias (Nc,)
    -> Y (M, Nc) in Bias' dtype, R (M, 1) fp32 (the RMS of x's row over K = N * C)."""
    M = Y_acc.shape[0] // SPLIT_K
    nc = Y_acc.shape[1]
    y = Y_acc.view(SPLIT_K, M, nc).sum(0)
    r_blk = torch.sqrt(R_acc.view(SPLIT_K, M, -1).sum(0) / (N * C))         # (M, n blocks)
    col = torch.arange(nc, device=Y_acc.device)
    r_col = r_blk[:, col // TILE_SIZE_N]
    scale = torch.where(col < N, alpha_pre, torch.where(col < 2 * N, alpha_post, alpha_res))
    lin = y * scale / r_col + Bias.float()
    sig = torch.sigmoid(lin)
    out = torch.where(col < N, sig, torch.where(col < 2 * N, 2 * sig, lin))
    return out.to(Bias.dtype), r_blk[:, :1]


def apply_residual_reference(x, f_out, y, *, N):
    """x (M, N * C), f_out (M, C), y (M, N * N + 2 N) -> out (M, N * C):
    out[b, i, :] = sum_j y_res[b, i, j] x[b, j, :] + y_post[b, i] f_out[b, :], in the kernel's
    compute dtype cd (L441: fp32 when any input is fp32, else x's dtype) and order: the inputs
    rounded to cd, then one fused multiply-add per term (its Tile IR has fma on cd tiles), each
    rounded to cd, j = 0 .. N - 1, the y_post term last. With bf16 inputs the sum accumulates in
    bf16; an fp32 sum differs from it by a few bf16 steps, beyond the tolerance where the terms
    cancel. The fma is modelled as an fp32 multiply-add (exact product of two bf16 values)
    rounded once to cd."""
    M, C = f_out.shape
    cd = torch.float32 if torch.float32 in (x.dtype, f_out.dtype, y.dtype) else x.dtype

    def in_cd(t):
        return t.to(cd).float()

    xv = in_cd(x.view(M, N, C))
    y_post = in_cd(y[:, N:2 * N]).unsqueeze(-1)                       # (M, N, 1)
    y_res = in_cd(y[:, 2 * N:2 * N + N * N].reshape(M, N, N))
    acc = torch.zeros(M, N, C, dtype=torch.float32, device=x.device)
    for j in range(N):
        acc = in_cd(torch.addcmul(acc, y_res[:, :, j:j + 1], xv[:, j:j + 1, :]))
    out = in_cd(torch.addcmul(acc, y_post, in_cd(f_out).unsqueeze(1)))
    return out.reshape(M, N * C).to(x.dtype)


def sinkhorn_reference(y, *, N):
    """y (M, N * N + 2 N) -> y with its residual columns replaced by 20 Sinkhorn-Knopp
    iterations (rows then columns normalised) of exp(y_res), computed in fp32."""
    out = y.clone()
    M = y.shape[0]
    mat = torch.exp(y[:, 2 * N:2 * N + N * N].float().reshape(M, N, N))
    for _ in range(20):
        mat = mat / mat.sum(dim=2, keepdim=True)
        mat = mat / mat.sum(dim=1, keepdim=True)
    out[:, 2 * N:2 * N + N * N] = mat.reshape(M, N * N).to(y.dtype)
    return out


def torch_impl(X, W, *, SPLIT_K, TILE_SIZE_K, TILE_SIZE_N):
    """The operator-level torch side: stage 1's (see split_gemm_rms_torch)."""
    return split_gemm_rms_torch(X, W, SPLIT_K=SPLIT_K, TILE_SIZE_K=TILE_SIZE_K, TILE_SIZE_N=TILE_SIZE_N)
