"""PyTorch semantics of TileGym's MoE activation backward (_moe_actgrad_bwd_kernel of
tilegym.ops.cutile.moe_actgrad_bwd): the down projection's input gradient, the activation's
backward and the routing-score gradient of a MoE layer, per expert segment.

The T*K routed slots are in expert-sorted order: position p holds flat slot
``s_scatter_idx[p]`` (token ``x_gather_idx[p] = s_scatter_idx[p] // K``), expert e owns the
positions ``expert_offset[e] .. expert_offset[e + 1] - 1``. With ``s = topk_scores[s_scatter_idx[p]]``
and ``dy1 = dout[x_gather_idx[p]] @ w2[e]^T`` (fp32):
``dz[p] = act'(z[p]) * dy1 * s``, ``y1s[p] = act(z[p]) * s``, ``ds[p] = sum(dy1 * act(z[p]))``.
GLU activations (swiglu 0, geglu 1, reglu 2) read z = [gate | up]; silu 3, relu 4, gelu 5,
relu_sq 6 read z alone: ACTIVATION_TYPE is a keyword-only parameter (the call's constexpr).

The routing (``routing_*``, init: derive) has one hot expert: expert 0 takes
``cap = cdiv(2 * T * K, E)`` slots (twice the mean), the others the rest at random (each fewer
than cap), so cap is the largest expert count: the max_tokens_per_expert TileGym's launch reads
from the routing for its grid.
"""
import math

import torch


def _routing(dout, w2, slot_rank, other_experts):
    """Flat expert id of every slot: the slots slot_rank[:cap] go to expert 0, slot_rank[cap + j]
    to other_experts[j]."""
    tk = slot_rank.numel()
    cap = tk - other_experts.numel()
    e_sorted = torch.cat([torch.zeros(cap, dtype=torch.long, device=slot_rank.device), other_experts.long()])
    flat = torch.empty(tk, dtype=torch.long, device=slot_rank.device)
    flat[slot_rank.long()] = e_sorted
    counts = torch.bincount(flat, minlength=w2.shape[0])
    if int(counts[1:].max()) >= cap:
        raise ValueError(f"an expert other than 0 has {int(counts[1:].max())} >= cap = {cap} slots: the "
                         f"grid would miss its tail")
    return flat, counts


def routing_s_scatter_idx(dout, w2, slot_rank, other_experts, *_):
    """argsort of the flat expert ids (stable): the flat slot at each expert-sorted position."""
    flat, _ = _routing(dout, w2, slot_rank, other_experts)
    return torch.argsort(flat, stable=True).to(torch.int32)


def routing_x_gather_idx(dout, w2, slot_rank, other_experts, s_scatter_idx, *_):
    """The token of each expert-sorted position: s_scatter_idx // K."""
    k = slot_rank.numel() // dout.shape[0]
    return (s_scatter_idx.long() // k).to(torch.int32)


def routing_expert_offset(dout, w2, slot_rank, other_experts, *_):
    """(E + 1,) exclusive prefix of the expert counts."""
    _, counts = _routing(dout, w2, slot_rank, other_experts)
    return torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)]).to(torch.int32)


def _erf_gelu(x):
    erf = torch.erf(x * (1.0 / math.sqrt(2.0)))
    pdf = torch.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return 0.5 * x * (1.0 + erf), 0.5 * (1.0 + erf) + x * pdf


def _act(kind: int, z, dy, inter: int):
    """(dz, act(z)) in fp32: dz = [dgate | dup] for GLU kinds."""
    if kind <= 2:
        g, u = z[:, :inter], z[:, inter:]
        if kind == 0:
            sg = torch.sigmoid(g)
            f = g * sg
            return torch.cat([dy * u * sg * (1.0 + g * (1.0 - sg)), dy * f], 1), f * u
        if kind == 1:
            f, fp = _erf_gelu(g)
            return torch.cat([dy * u * fp, dy * f], 1), f * u
        f = torch.relu(g)
        return torch.cat([dy * u * (g > 0).float(), dy * f], 1), f * u
    if kind == 3:
        sg = torch.sigmoid(z)
        return dy * sg * (1.0 + z * (1.0 - sg)), z * sg
    if kind == 4:
        return dy * (z > 0).float(), torch.relu(z)
    if kind == 5:
        f, fp = _erf_gelu(z)
        return dy * fp, f
    r = torch.relu(z)
    return dy * 2.0 * r, r * r


def _dy1(dout, w2, x_gather_idx, expert_offset, native: bool):
    """dout[x_gather_idx[p]] @ w2[e]^T per expert segment, fp32 (native: in the input dtype)."""
    rows = dout.index_select(0, x_gather_idx.long())
    dy = torch.empty(rows.shape[0], w2.shape[1], dtype=dout.dtype if native else torch.float32,
                     device=dout.device)
    off = expert_offset.tolist()
    for e in range(w2.shape[0]):
        if off[e + 1] > off[e]:
            a, w = rows[off[e]:off[e + 1]], w2[e]
            dy[off[e]:off[e + 1]] = a @ w.T if native else a.float() @ w.float().T
    return dy


def reference(dout, w2, slot_rank, other_experts, s_scatter_idx, x_gather_idx, expert_offset, z,
              topk_scores, *, ACTIVATION_TYPE: int):
    """(dz, y1s, ds): dz like z, y1s (T*K, I) in z's dtype, ds (T*K,) fp32 by sorted position."""
    inter = w2.shape[1]
    dy = _dy1(dout, w2, x_gather_idx, expert_offset, native=False)
    s = topk_scores.float()[s_scatter_idx.long()][:, None]
    dz, f = _act(ACTIVATION_TYPE, z.float(), dy, inter)
    return (dz * s).to(z.dtype), (f * s).to(z.dtype), (dy * f).sum(1)


def torch_impl(dout, w2, slot_rank, other_experts, s_scatter_idx, x_gather_idx, expert_offset, z,
               topk_scores, *, ACTIVATION_TYPE: int):
    """PyTorch's own path: per-expert native-dtype matmuls (cuBLAS) and the activation backward
    through torch.autograd on the activation alone (TileGym's test reference does the same)."""
    inter = w2.shape[1]
    kind = ACTIVATION_TYPE
    dy = _dy1(dout, w2, x_gather_idx, expert_offset, native=True).float()
    zz = z.float().requires_grad_(True)
    fns = [lambda t: torch.nn.functional.silu(t[:, :inter]) * t[:, inter:],
           lambda t: torch.nn.functional.gelu(t[:, :inter]) * t[:, inter:],
           lambda t: torch.relu(t[:, :inter]) * t[:, inter:],
           torch.nn.functional.silu, torch.relu, torch.nn.functional.gelu, lambda t: torch.relu(t) ** 2]
    with torch.enable_grad():
        f = fns[kind](zz)
        (dz,) = torch.autograd.grad(f, zz, dy)
    s = topk_scores[s_scatter_idx.long()][:, None]
    return (dz * s).to(z.dtype), (f.detach() * s).to(z.dtype), (dy * f.detach()).sum(1)
