"""PyTorch semantics of TileGym's Mamba-2 SSD kernels (tilegym.ops.cutile.mamba2), one function
per kernel, written from the kernels' math (fp32, with the kernels' explicit bf16 roundings).

Shapes: x, dout (B, T, H, P); b, c (B, T, G, N) shared by the H // G heads of a group; dt
(B, T, H) > 0; a, d (H,) fp32 (a < 0); states (B, H, P, N) fp32. T is cut into nc chunks of CS
(the constexpr chunk_size: reference.py's functions take the constexprs they need as keyword-only
parameters). Inside a chunk, the decay is
``dec_t = log2(e) * cumsum(a[h] * dt_t)`` and ``dec_last`` its last value; ``exp2`` of differences
of it weigh the steps. Forward: the state entering chunk k is ``S_k`` (``S_0`` the initial
state), ``S_{k+1} = exp2(dec_last) S_k + x^T (b * dt * exp2(dec_last - dec))``;
``y_i = exp2(dec_i) c_i S_k^T + sum_{j<=i} (c_i . b_j) exp2(dec_i - dec_j) dt_j x_j + d[h] x_i``.
The backward kernels' functions follow their code step by step (docstrings). The ``derive_*``
functions make a kernel's inputs that earlier kernels produce (init: derive), with the first
autotune configs' tilings where a layout depends on them (bwd_pass_state: BLOCK_HEAD
min(64, P), BLOCK_STATE 16).
"""
import math

import torch

LOG2E = math.log2(math.e)
PARTIALS_PER_TILE = 128      # mamba2.py _PARTIALS_PER_TILE


def _bh(t: torch.Tensor, cs: int) -> torch.Tensor:
    """(B, T, H, ...) -> (B, H, nc, CS, ...) fp32."""
    b, tl, h = t.shape[:3]
    return t.float().reshape((b, tl // cs, cs, h) + tuple(t.shape[3:])).movedim(3, 1)


def _groups(t: torch.Tensor, heads: int, cs: int) -> torch.Tensor:
    """(B, T, G, N) -> (B, H, nc, CS, N): each head reads its group's row."""
    g = t.shape[2]
    return _bh(t, cs)[:, torch.arange(heads, device=t.device) // (heads // g)]


def _bf16(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Round to like's dtype and back (the kernels' astype before an mma)."""
    return t.to(like.dtype).float()


def _decay(a, dt, cs):
    """(B, H, nc, CS) fp32 in-chunk decay (log2 units)."""
    return torch.cumsum(a.float()[None, :, None, None] * _bh(dt, cs), -1) * LOG2E


# ---- chunk_cumsum_kernel ---------------------------------------------------------------------
def chunk_cumsum_reference(a, dt, *, chunk_size: int):
    """(decay_bth (B, T, H) fp32, decay_bht (B, H, T) fp32, dt_bht (B, H, T) in dt's dtype)."""
    bsz, tl, h = dt.shape
    dec = _decay(a, dt, chunk_size).reshape(bsz, h, tl)
    return dec.transpose(1, 2).contiguous(), dec.contiguous(), dt.transpose(1, 2).contiguous()


def derive_dt_bht(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    return dt.transpose(1, 2).contiguous()


def derive_decay_bht(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    return chunk_cumsum_reference(a, dt, chunk_size=chunk_size)[1]


def derive_decay_bth(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    return chunk_cumsum_reference(a, dt, chunk_size=chunk_size)[0]


# ---- fwd_pass_state_kernel -------------------------------------------------------------------
def _states(x, b, dt, a, init_state, cs):
    """(chunk-entry states (B, H, nc, P, N) fp32, final state (B, H, P, N) fp32)."""
    h = x.shape[2]
    xc, bc, dtc, dec = _bh(x, cs), _groups(b, h, cs), _bh(dt, cs), _decay(a, dt, cs)
    nc = xc.shape[2]
    s = init_state.float().clone()
    hid = []
    for k in range(nc):
        hid.append(s)
        last = dec[:, :, k, -1:]
        w = _bf16(bc[:, :, k] * (dtc[:, :, k] * torch.exp2(last - dec[:, :, k]))[..., None], b)
        s = torch.exp2(last)[..., None] * s + xc[:, :, k].transpose(-1, -2) @ w
    return torch.stack(hid, 2), s


def fwd_pass_state_reference(x, b, c, d, a, dt, dout, dfinal_state, init_state, dt_bht, decay_bht, *,
                             chunk_size: int):
    """(hiddens (B, H, nc, P, N) in c's dtype: the states entering each chunk, final_state fp32);
    mamba2_chunk_forward keeps its states in c's dtype and passes one buffer as hiddens and
    hid_narrow (DUAL false)."""
    hid, fin = _states(x, b, dt, a, init_state, chunk_size)
    return hid.to(c.dtype), fin


def derive_hiddens(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    """Forward chunk-entry states in c's dtype (fwd_pass_state_kernel in mamba2_chunk_forward)."""
    return _states(x, b, dt, a, init_state, chunk_size)[0].to(c.dtype)


# ---- compute_out_kernel / compute_out_swap_kernel --------------------------------------------
def compute_out_reference(x, b, c, d, a, dt, dout, dfinal_state, init_state, dt_bht, decay_bht,
                          hiddens, *, chunk_size: int):
    """y (B, T, H, P) in x's dtype from the chunk-entry states (both kernels: the swap one
    computes the transpose)."""
    cs = chunk_size
    bsz, tl, h, p = x.shape
    xc, bc, cc = _bh(x, cs), _groups(b, h, cs), _groups(c, h, cs)
    nc = xc.shape[2]
    dec = decay_bht.float().reshape(bsz, h, nc, cs)
    dtc = dt_bht.reshape(bsz, h, nc, cs)
    idx = torch.arange(cs, device=x.device)
    cb = (cc @ bc.transpose(-1, -2)) * torch.exp2(dec[..., :, None] - dec[..., None, :])
    cb = torch.where(idx[:, None] >= idx[None, :], cb, 0.0)
    y = (cc @ hiddens.float().transpose(-1, -2)) * torch.exp2(dec)[..., None]
    dtx = (dtc[..., None] * _bh(x, cs).to(dt_bht.dtype)).float()      # dt * x in the input dtype
    y = y + cb @ dtx + d.float()[None, :, None, None, None] * xc
    return y.movedim(1, 3).reshape(bsz, tl, h, p).to(x.dtype)


# ---- bwd_pass_state_kernel -------------------------------------------------------------------
def _regroup(prod: torch.Tensor, bh: int, bs: int) -> torch.Tensor:
    """hid * dhid (..., P, N) -> the kernel's per-tile partial sums (..., P/bh, N/bs, 128)."""
    *lead, p, n = prod.shape
    t = prod.reshape(*lead, p // bh, bh, n // bs, bs).movedim(-2, -3)       # (..., P/bh, N/bs, bh, bs)
    if bh == 64 and bs % 8 == 0:
        t = t.reshape(*t.shape[:-2], 4, 2, 8, bs // 8, 4, 2)
        k = t.dim()
        t = t.permute(*range(k - 6), k - 6, k - 4, k - 2, k - 5, k - 3, k - 1)
    t = t.reshape(*lead, p // bh, n // bs, PARTIALS_PER_TILE, bh * bs // PARTIALS_PER_TILE)
    return t.sum(-1)


def _bwd_states(c, decay_bth, dout, dfinal_state, hiddens, cs, bh, bs, narrow):
    """(dhiddens (B, H, nc, P, N) in ``narrow``, partials (B, H, nc, P/bh, N/bs, 128) or None,
    dinit_state fp32): the reverse scan of bwd_pass_state_kernel."""
    bsz, tl, h, p = dout.shape
    cc, doc = _groups(c, h, cs), _bh(dout, cs)
    nc = doc.shape[2]
    dec = decay_bth.float().reshape(bsz, nc, cs, h).movedim(3, 1)
    s = dfinal_state.float().clone()
    dh, parts = [None] * nc, [None] * nc
    for k in reversed(range(nc)):
        dh[k] = s
        if hiddens is not None:
            parts[k] = _regroup(hiddens[:, :, k].float() * s, bh, bs)
        cd = _bf16(cc[:, :, k] * torch.exp2(dec[:, :, k])[..., None], dout)
        s = torch.exp2(dec[:, :, k, -1:])[..., None] * s + doc[:, :, k].transpose(-1, -2) @ cd
    parts = torch.stack(parts, 2) if hiddens is not None else None
    return torch.stack(dh, 2).to(narrow), parts, s


def bwd_pass_state_reference(x, b, c, d, a, dt, dout, dfinal_state, init_state, decay_bth, hiddens, *,
                             chunk_size: int, BLOCK_HEAD: int, BLOCK_STATE: int):
    """(dhiddens in b's dtype (narrow_dtype(f32, b, x) for bf16 data), dd_last_partials
    (B, H, nc, P/BLOCK_HEAD, N/BLOCK_STATE, 128) fp32, dinit_state fp32). dhiddens[k] is the
    state gradient stored before chunk k's update of the reverse scan."""
    return _bwd_states(c, decay_bth, dout, dfinal_state, hiddens, chunk_size, BLOCK_HEAD, BLOCK_STATE,
                       b.dtype)


def derive_wide_hiddens(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    """The fp32 chunk-entry states of the backward's dual state pass (state_dtype fp32)."""
    return _states(x, b, dt, a, init_state, chunk_size)[0]


def derive_dhiddens(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    """bwd_pass_state_kernel's dhiddens (b's dtype) for the kernels after it."""
    cs = chunk_size
    dec_bth = chunk_cumsum_reference(a, dt, chunk_size=chunk_size)[0]
    return _bwd_states(c, dec_bth, dout, dfinal_state, None, cs, 64, 16, b.dtype)[0]


# ---- compute_dd_dcb_dx_kernel ----------------------------------------------------------------
def _dd_dcb_dx(x, b, c, d, dt_bht, decay_bht, dout, dhiddens, cs):
    bsz, tl, h, p = x.shape
    xc, bc, cc, doc = _bh(x, cs), _groups(b, h, cs), _groups(c, h, cs), _bh(dout, cs)
    nc = xc.shape[2]
    dec = decay_bht.float().reshape(bsz, h, nc, cs)
    dtc = dt_bht.float().reshape(bsz, h, nc, cs)
    idx = torch.arange(cs, device=x.device)
    upper = idx[None, :] >= idx[:, None]                                  # [i, j]: j >= i
    w = torch.where(upper, torch.exp2(dec[..., None, :] - dec[..., :, None]), 0.0)
    coef = torch.exp2(dec[..., -1:] - dec)
    xdo = xc @ doc.transpose(-1, -2)                                      # [i, j] = x_i . dout_j
    raw = bc @ cc.transpose(-1, -2)                                       # [i, j] = b_i . c_j
    bdh = bc @ dhiddens.float().transpose(-1, -2)                         # [i, p] = b_i . dhid_p
    dxtd = _bf16(raw * w, dout) @ doc
    dx = d.float()[None, :, None, None, None] * doc + (dxtd + bdh * coef[..., None]) * dtc[..., None]
    dd = torch.diagonal(xdo, dim1=-2, dim2=-1).sum(-1)                    # (B, H, nc)
    dcb = xdo * w * dtc[..., None]                                        # [i, j], fp32
    dcbcb = dcb * raw
    rs = dcbcb.sum(-1)
    ddec = dcbcb.sum(-2) - rs
    ddt = rs / dtc

    def bth(t):                                                           # (B, H, nc, CS) -> (B, T, H)
        return t.reshape(bsz, h, tl).transpose(1, 2)
    return (dx.movedim(1, 3).reshape(bsz, tl, h, p).to(x.dtype), bth(ddt).to(dt_bht.dtype), dd,
            bth(ddec).contiguous(), dcb.movedim(1, 3).reshape(bsz, tl, h, cs).to(c.dtype))


def compute_dd_dcb_dx_reference(x, b, c, d, a, dt, dout, dfinal_state, init_state, dt_bht,
                                decay_bht, dhiddens, *, chunk_size: int):
    """(dx like x, ddt partial (B, T, H) in dt's dtype, dd (B, H, nc) fp32 per-chunk sums of
    x_i . dout_i, ddecay_cumsum partial (B, T, H) fp32, dcb (B, T, H, CS) in c's dtype with
    dcb[i, j] = (x_i . dout_j) exp2(dec_j - dec_i) dt_i for j >= i)."""
    return _dd_dcb_dx(x, b, c, d, dt_bht, decay_bht, dout, dhiddens, chunk_size)


def _dd_derived(x, b, c, d, a, dt, dout, dfinal_state, init_state, chunk_size):
    dec = chunk_cumsum_reference(a, dt, chunk_size=chunk_size)
    dh = derive_dhiddens(x, b, c, d, a, dt, dout, dfinal_state, init_state, chunk_size=chunk_size)
    return _dd_dcb_dx(x, b, c, d, dec[2], dec[1], dout, dh, chunk_size)


def derive_dcb(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    return _dd_derived(x, b, c, d, a, dt, dout, dfinal_state, init_state, chunk_size)[4]


def derive_ddecay_partial(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    return _dd_derived(x, b, c, d, a, dt, dout, dfinal_state, init_state, chunk_size)[3]


def derive_ddt_partial(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    return _dd_derived(x, b, c, d, a, dt, dout, dfinal_state, init_state, chunk_size)[1]


def derive_narrow_hiddens(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    """The dual state pass's narrow copy (dout's dtype) of the fp32 chunk-entry states."""
    return _states(x, b, dt, a, init_state, chunk_size)[0].to(dout.dtype)


def derive_partials(x, b, c, d, a, dt, dout, dfinal_state, init_state, *_, chunk_size: int):
    """bwd_pass_state_kernel's partials viewed as (B, H, nc, n_partials) (its first config's
    tiling: BLOCK_HEAD min(64, P), BLOCK_STATE 16)."""
    cs = chunk_size
    dec_bth = chunk_cumsum_reference(a, dt, chunk_size=chunk_size)[0]
    wide = _states(x, b, dt, a, init_state, cs)[0]
    parts = _bwd_states(c, dec_bth, dout, dfinal_state, wide, cs, min(64, x.shape[3]), 16, b.dtype)[1]
    return parts.reshape(parts.shape[0], parts.shape[1], parts.shape[2], -1)


# ---- compute_da_db_dc_ddt_kernel -------------------------------------------------------------
def compute_da_db_dc_ddt_reference(x, b, c, d, a, dt, dout, dfinal_state, init_state, dt_bht, decay_bht,
                                   hiddens, dhiddens, dcb, ddecay_cumsum, dd_last_partials, ddt_partial, *,
                                   chunk_size: int):
    """(da (B, H, nc) fp32, db, dc (B, T, G, N) fp32 summed over the heads of a group (the
    grouped launch, REDUCE_HEADS, accumulates them atomically into zeroed buffers), ddt (B, T, H)
    in dt's dtype)."""
    cs = chunk_size
    bsz, tl, h, p = x.shape
    g, n = b.shape[2], b.shape[3]
    xc, bc, cc, doc = _bh(x, cs), _groups(b, h, cs), _groups(c, h, cs), _bh(dout, cs)
    nc = xc.shape[2]
    dec = decay_bht.float().reshape(bsz, h, nc, cs)
    dtc = dt_bht.float().reshape(bsz, h, nc, cs)
    dcbk = _bh(dcb, cs)                                                    # (B, H, nc, CS_i, CS_j)
    ddec = _bh(ddecay_cumsum, cs)
    ddt = _bh(ddt_partial, cs)
    last = dec[..., -1:]
    dd_last = dd_last_partials.float().sum(-1, keepdim=True) * torch.exp2(last)
    db = dcbk @ cc                                                         # [i, n]
    dc = dcbk.transpose(-1, -2) @ bc                                       # [j, n]
    dc_d = (doc @ hiddens.float()) * torch.exp2(dec)[..., None]
    dc = dc + dc_d
    ddec = ddec + (dc_d * cc).sum(-1)
    db_dt_d = (xc @ dhiddens.float()) * torch.exp2(last - dec)[..., None]
    db = db + db_dt_d * dtc[..., None]
    ddt = ddt + (db_dt_d * bc).sum(-1)
    r1 = (db_dt_d * bc * dtc[..., None]).sum(-1)
    ddec = ddec - r1
    dd_last = dd_last + r1.sum(-1, keepdim=True)
    ddec = dd_last + torch.flip(torch.cumsum(torch.flip(ddec, [-1]), -1), [-1])  # dd_last + sum_{k>=i}
    ddt = ddt + ddec * a.float()[None, :, None, None]
    da = (dtc * ddec).sum(-1)

    def per_group(t):                                                      # (B, H, nc, CS, N) -> (B, T, G, N)
        t = t.reshape(bsz, g, h // g, nc, cs, n).sum(2)
        return t.movedim(1, 3).reshape(bsz, tl, g, n)
    return (da, per_group(db), per_group(dc),
            ddt.reshape(bsz, h, tl).transpose(1, 2).to(dt.dtype))
