"""PyTorch semantics of TileGym's recurrent gated delta rule (tilegym.ops.cutile.
recurrent_gated_delta_rule): the three kernels (standard, persistent, decode_vstream) compute the
same thing, one (batch, value head) state at a time.

Per value head hv (query/key head h = hv // (HV // H)) and step t, in fp32, with
q_t, k_t optionally l2-normalised (x * rsqrt(sum(x^2) + 1e-6)) and q_t scaled by 1/sqrt(K):
``S = S * exp(g_t)``, ``delta = (v_t - S^T k_t) * beta_t``, ``S = S + k_t delta^T``,
``o_t = S^T q_t``. S (K, V) starts from the initial state (zeros without one) and is returned
as the final state. A launch without an initial state gets a (1, 1, 1, 1) dummy for it, a
launch without a final state leaves the (1, 1, 1, 1) dummy as it was (zeros here). The flags
are the kernels' constexprs, keyword-only parameters here.
"""
import torch


def _run(query, key, value, gate, beta, state_in, has_init, l2norm, final):
    b, t_len, h, k = query.shape
    hv, v = value.shape[2], value.shape[3]
    heads = torch.arange(hv, device=query.device) // (hv // h)
    q = query.float()[:, :, heads]
    kk = key.float()[:, :, heads]
    if l2norm:
        q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        kk = kk * torch.rsqrt((kk * kk).sum(-1, keepdim=True) + 1e-6)
    q = q * k ** -0.5
    s = state_in.float().clone() if has_init else query.new_zeros(b, hv, k, v, dtype=torch.float32)
    g, bt, vv = gate.float().exp(), beta.float(), value.float()
    out = torch.empty(b, t_len, hv, v, dtype=torch.float32, device=query.device)
    for t in range(t_len):
        s = s * g[:, t, :, None, None]
        kt = kk[:, t]
        delta = (vv[:, t] - torch.einsum("bhkv,bhk->bhv", s, kt)) * bt[:, t, :, None]
        s = s + kt[..., None] * delta[:, :, None, :]
        out[:, t] = torch.einsum("bhkv,bhk->bhv", s, q[:, t])
    final = s if final else torch.zeros(1, 1, 1, 1, device=query.device)
    return out.to(query.dtype), final


def reference(query, key, value, gate, beta, state_in, *, HAS_INITIAL_STATE: bool, USE_QK_L2NORM: bool,
              OUTPUT_FINAL_STATE: bool):
    """(output (B, T, HV, V) in the input dtype, final state (B, HV, K, V) fp32 or the dummy)."""
    return _run(query, key, value, gate, beta, state_in, HAS_INITIAL_STATE, USE_QK_L2NORM, OUTPUT_FINAL_STATE)


def torch_impl(query, key, value, gate, beta, state_in, *, HAS_INITIAL_STATE: bool, USE_QK_L2NORM: bool,
               OUTPUT_FINAL_STATE: bool):
    """PyTorch's own path: the same recurrence step by step with torch ops (the loop of
    transformers' torch_recurrent_gated_delta_rule, Qwen3-Next), there is no fused torch op."""
    return _run(query, key, value, gate, beta, state_in, HAS_INITIAL_STATE, USE_QK_L2NORM, OUTPUT_FINAL_STATE)
