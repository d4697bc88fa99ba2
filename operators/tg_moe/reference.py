"""PyTorch semantics of TileGym's fused MoE GEMM (_fused_moe_kernel of tilegym.ops.cutile.moe).

One launch multiplies every routed slot s (= token * top_k + k) by its expert's weight:
``C[s] = A[s // TOP_K] @ B[e]^T`` (times ``topk_weights[s]`` when MUL_ROUTED_WEIGHT), fp32
accumulation, rounded to C's dtype. The kernel does not read the expert of a slot from the
router: it walks ``sorted_token_ids`` (the slots grouped by expert, each expert's run padded to
a multiple of TILE_SIZE_M with the id NUMEL) in blocks of TILE_SIZE_M, block i belonging to
expert ``expert_ids[i]``, up to ``num_tokens_post_padded``. Those three come from
moe_align_block_size (four TileGym kernels, operator tg_moe_align_block); here the
``routing_*`` functions make them from ``topk_ids`` the same way (init: derive). TOP_K is top_k
for the gate/up GEMM (A holds one row per token) and 1 for the down GEMM (A holds one row per
slot); it, TILE_SIZE_M and MUL_ROUTED_WEIGHT are keyword-only parameters (the call's constexprs).
"""
import torch


def _align(topk_ids: torch.Tensor, num_experts: int, block: int):
    """moe_align_block_size: (sorted_token_ids, expert_ids, num_tokens_post_padded), int32, in
    the buffers TileGym allocates (numel + E * (block - 1) ids filled with numel; expert_ids of
    the blocks past the padded total are never read by the GEMM: 0 here)."""
    ids = topk_ids.reshape(-1).long()
    numel, dev = ids.numel(), ids.device
    counts = torch.bincount(ids, minlength=num_experts)
    padded = (counts + block - 1) // block * block
    start = torch.cumsum(padded, 0) - padded
    order = torch.argsort(ids, stable=True)
    rank = torch.arange(numel, device=dev) - (torch.cumsum(counts, 0) - counts)[ids[order]]
    em = numel + num_experts * (block - 1)
    sorted_ids = torch.full((em,), numel, dtype=torch.int32, device=dev)
    sorted_ids[start[ids[order]] + rank] = order.to(torch.int32)
    expert_ids = torch.zeros(-(-em // block), dtype=torch.int32, device=dev)
    blocks = torch.arange(expert_ids.numel(), device=dev) * block
    total = padded.sum()
    owner = torch.searchsorted(torch.cumsum(padded, 0), blocks, right=True)
    expert_ids[blocks < total] = owner[blocks < total].to(torch.int32)
    return sorted_ids, expert_ids, total.reshape(1).to(torch.int32)


def routing_sorted_token_ids(a, b, topk_weights, topk_ids, *_, TILE_SIZE_M: int):
    return _align(topk_ids, b.shape[0], TILE_SIZE_M)[0]


def routing_expert_ids(a, b, topk_weights, topk_ids, *_, TILE_SIZE_M: int):
    return _align(topk_ids, b.shape[0], TILE_SIZE_M)[1]


def routing_num_tokens_post_padded(a, b, topk_weights, topk_ids, *_, TILE_SIZE_M: int):
    return _align(topk_ids, b.shape[0], TILE_SIZE_M)[2]


def reference(a, b, topk_weights, topk_ids, sorted_token_ids, expert_ids, num_tokens_post_padded, a_scale,
              b_scale, *, TILE_SIZE_M: int, TOP_K: int, MUL_ROUTED_WEIGHT: int):
    """C (numel, N) in A's dtype: fp32 products of each slot's A row with its expert's B^T,
    for the slots the kernel visits (positions below num_tokens_post_padded, padding skipped)."""
    numel = topk_weights.numel()
    pos = torch.arange(int(num_tokens_post_padded.item()), device=a.device)
    slot = sorted_token_ids[pos].long()
    expert = expert_ids[pos // TILE_SIZE_M].long()
    keep = slot < numel
    slot, expert = slot[keep], expert[keep]
    c = torch.zeros(numel, b.shape[1], dtype=torch.float32, device=a.device)
    for e in torch.unique(expert).tolist():
        s = slot[expert == e]
        c[s] = a[s // TOP_K].float() @ b[e].float().T
    if MUL_ROUTED_WEIGHT:
        c = c * topk_weights.float()[:, None]
    return c.to(a.dtype)


def torch_impl(a, b, topk_weights, topk_ids, sorted_token_ids, expert_ids, num_tokens_post_padded, a_scale,
               b_scale, *, TOP_K: int, MUL_ROUTED_WEIGHT: int):
    """PyTorch's own path for the same result: per expert, index_select the routed rows and one
    native-dtype torch.matmul (cuBLAS), as TileGym's fused_moe_torch routes by topk_ids."""
    numel = topk_weights.numel()
    ids = topk_ids.reshape(-1)
    c = torch.empty(numel, b.shape[1], dtype=a.dtype, device=a.device)
    for e in range(b.shape[0]):
        s = (ids == e).nonzero().squeeze(1)
        c[s] = a.index_select(0, s // TOP_K) @ b[e].T
    if MUL_ROUTED_WEIGHT:
        c = c * topk_weights[:, None]
    return c
