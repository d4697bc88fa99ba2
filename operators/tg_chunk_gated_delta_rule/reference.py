"""PyTorch semantics of TileGym's chunked gated delta rule (tilegym.ops.cutile.
chunk_gated_delta_rule): two kernels, one per function here.

The sequence is cut into nc = cdiv(T, CS) chunks of CS steps (the last zero-padded). Stage 1
(_intra_chunk_prepare_kernel) works inside each chunk: k and q optionally l2-normalised
(x * rsqrt(sum(x^2) + 1e-6)), ``g_cum = cumsum(g)``, the strictly lower
``A[i, j] = -(beta_i k_i . k_j) exp(g_cum_i - g_cum_j)``, ``Tm = (I - A)^-1`` (TileGym solves it
row by row, or by Neumann squaring when ||A||_inf < 1), and writes ``V_corr = Tm (beta v)``,
``K_cumdecay = Tm (beta k exp(g_cum))``, ``Q_out = q / sqrt(K)``, ``K_out = k`` (bf16 for bf16/f16
inputs, else fp32) and ``G_cum_out = g_cum`` (fp32), laid out (B, H, nc, CS, D).
Stage 2 (_chunk_inter_recurrence_kernel) carries the (K, V) state S over the chunks:
``v_new = V_corr - K_cumdecay S``,
``out = (Q exp(g_cum)) S + ((Q K^T) * exp(g_cum_i - g_cum_j), causal) v_new``,
``S = S exp(g_last) + (K exp(g_last - g_cum))^T v_new``; out is fp32 (B, H, nc, CS, V), S the
final state. The kernels' matmuls run in tf32; here in fp64 (the tolerance allows tf32).
The kernels' constexprs the semantics need are keyword-only parameters; an absent state is a
(1, 1, 1, 1) dummy.
"""
import torch


def _chunked(x: torch.Tensor, cs: int) -> torch.Tensor:
    """(B, T, H, ...) -> (B, H, nc, CS, ...) in fp64, zero-padded to nc * CS steps."""
    b, t = x.shape[:2]
    nc = -(-t // cs)
    pad = x.new_zeros((b, nc * cs - t) + tuple(x.shape[2:]))
    y = torch.cat([x, pad], 1).double().reshape((b, nc, cs) + tuple(x.shape[2:]))
    return y.movedim(3, 1)


def _l2(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def _stage1(q, k, v, g, beta, l2norm: bool, cs: int):
    kk, qq, vv = _chunked(k, cs), _chunked(q, cs), _chunked(v, cs)
    gc = _chunked(g, cs).cumsum(-1)
    bt = _chunked(beta, cs)
    if l2norm:
        kk, qq = _l2(kk), _l2(qq)
    qq = qq * q.shape[-1] ** -0.5
    idx = torch.arange(cs, device=q.device)
    decay = torch.where(idx[:, None] >= idx[None, :], torch.exp(gc[..., :, None] - gc[..., None, :]), 0.0)
    kb = kk * bt[..., None]
    a = torch.where(idx[:, None] > idx[None, :], -(kb @ kk.transpose(-1, -2)) * decay, 0.0)
    eye = torch.eye(cs, dtype=torch.float64, device=q.device)
    tm = torch.linalg.solve_triangular(eye - a, eye.expand_as(a), upper=False)
    v_corr = tm @ (vv * bt[..., None])
    k_cumdecay = tm @ (kb * torch.exp(gc)[..., None])
    inter = torch.bfloat16 if q.dtype in (torch.bfloat16, torch.float16) else torch.float32
    return qq.to(inter), kk.to(inter), v_corr.to(inter), k_cumdecay.to(inter), gc.float()


def intra_chunk_reference(q, k, v, g, beta, *, USE_QK_L2NORM: bool, CHUNK_SIZE: int):
    """Stage 1's outputs: (Q_out, K_out, V_corr, K_cumdecay, G_cum_out)."""
    return _stage1(q, k, v, g, beta, USE_QK_L2NORM, CHUNK_SIZE)


# stage 2's inputs: stage 1 as Qwen3.5 runs it (l2-normalised q/k; stage 2 has no such constexpr)


def derive_q_chunked(q, k, v, g, beta, *_, CHUNK_SIZE: int, USE_QK_L2NORM: bool = True):
    return _stage1(q, k, v, g, beta, USE_QK_L2NORM, CHUNK_SIZE)[0]


def derive_k_chunked(q, k, v, g, beta, *_, CHUNK_SIZE: int, USE_QK_L2NORM: bool = True):
    return _stage1(q, k, v, g, beta, USE_QK_L2NORM, CHUNK_SIZE)[1]


def derive_v_corrected(q, k, v, g, beta, *_, CHUNK_SIZE: int, USE_QK_L2NORM: bool = True):
    return _stage1(q, k, v, g, beta, USE_QK_L2NORM, CHUNK_SIZE)[2]


def derive_k_cumdecay(q, k, v, g, beta, *_, CHUNK_SIZE: int, USE_QK_L2NORM: bool = True):
    return _stage1(q, k, v, g, beta, USE_QK_L2NORM, CHUNK_SIZE)[3]


def derive_g_cum(q, k, v, g, beta, *_, CHUNK_SIZE: int, USE_QK_L2NORM: bool = True):
    return _stage1(q, k, v, g, beta, USE_QK_L2NORM, CHUNK_SIZE)[4]


def inter_chunk_reference(q, k, v, g, beta, q_ch, k_ch, v_corr, k_cumdecay, g_cum, init_state, *,
                          HAS_INITIAL_STATE: bool, OUTPUT_FINAL_STATE: bool):
    """Stage 2's outputs: (Output (B, H, nc, CS, V) fp32, FinalState (B, H, K, V) fp32 or the
    (1, 1, 1, 1) dummy as the launch leaves it)."""
    b, h, nc, cs, kd = q_ch.shape
    vd = v_corr.shape[-1]
    qq, kk, vc, kc, gc = (x.double() for x in (q_ch, k_ch, v_corr, k_cumdecay, g_cum))
    s = (init_state.double().clone() if HAS_INITIAL_STATE
         else torch.zeros(b, h, kd, vd, dtype=torch.float64, device=q_ch.device))
    idx = torch.arange(cs, device=q_ch.device)
    causal = idx[:, None] >= idx[None, :]
    out = torch.empty(b, h, nc, cs, vd, dtype=torch.float64, device=q_ch.device)
    for c in range(nc):
        g_c = gc[:, :, c]
        v_new = vc[:, :, c] - kc[:, :, c] @ s
        decay = torch.where(causal, torch.exp(g_c[..., :, None] - g_c[..., None, :]), 0.0)
        qk = (qq[:, :, c] @ kk[:, :, c].transpose(-1, -2)) * decay
        out[:, :, c] = (qq[:, :, c] * torch.exp(g_c)[..., None]) @ s + qk @ v_new
        g_last = g_c[..., -1:]
        kw = kk[:, :, c] * torch.exp(g_last - g_c)[..., None]
        s = s * torch.exp(g_last)[..., None] + kw.transpose(-1, -2) @ v_new
    final = s.float() if OUTPUT_FINAL_STATE else torch.zeros(1, 1, 1, 1, device=q_ch.device)
    return out.float(), final
