"""PyTorch semantics of TileGym's moe_align_block_size, one function per stage kernel
(tilegym.ops.cutile.moe_align_block): the vLLM routing layout for the fused MoE GEMM.

``topk_ids`` is the flat (NUMEL,) expert id of every routed slot (token * top_k + k), values in
[0, E). The launch code splits the slots into ``NP = max(E, cdiv(NUMEL, 128))`` programs of
``TPT = cdiv(NUMEL, NP)`` consecutive slots. ``tokens_cnts`` is (NP + 1, E) int32, row 0 zero.
The constexprs the semantics need (NUM_EXPERTS, BLOCK_SIZE) are keyword-only parameters: the
GPU stages pass the call's values.
"""
import torch

TOKENS_PER_PROGRAM = 128      # TileGym's _TARGET_TOKENS_PER_PROGRAM (moe_align_block.py)


def _programs(numel: int, num_experts: int) -> tuple[int, int]:
    """(NP, TPT) as _moe_align_block_size computes them."""
    np_ = max(num_experts, -(-numel // TOKENS_PER_PROGRAM))
    return np_, -(-numel // np_)


def stage1_reference(topk_ids: torch.Tensor, *, NUM_EXPERTS: int) -> torch.Tensor:
    """Histogram per program: row p + 1 of the (NP + 1, E) int32 result counts expert e among
    slots [p * TPT, (p + 1) * TPT); row 0 stays zero (the launch code's zeros buffer)."""
    e = NUM_EXPERTS
    numel = topk_ids.numel()
    np_, tpt = _programs(numel, e)
    prog = torch.arange(numel, device=topk_ids.device) // tpt
    cnts = torch.zeros((np_ + 1) * e, dtype=torch.int64, device=topk_ids.device)
    cnts.index_add_(0, (prog + 1) * e + topk_ids.long(), torch.ones_like(prog))
    return cnts.view(np_ + 1, e).to(torch.int32)


def stage2_reference(topk_ids: torch.Tensor, tokens_cnts: torch.Tensor) -> torch.Tensor:
    """Stage 2 prefix-sums each expert's column of stage 1's counts over the programs in place:
    row p then holds the number of expert-e slots in programs 0 .. p - 1 (row 0 stays zero)."""
    return tokens_cnts.cumsum(0, dtype=torch.int32)


def stage2_counts(topk_ids: torch.Tensor, *_, NUM_EXPERTS: int) -> torch.Tensor:
    """tokens_cnts as stage 2 leaves it (the input of stages 3 and 4b)."""
    return stage1_reference(topk_ids, NUM_EXPERTS=NUM_EXPERTS).cumsum(0, dtype=torch.int32)


def _padded_counts(tokens_cnts: torch.Tensor, bs: int) -> torch.Tensor:
    total = tokens_cnts[-1].long()                      # row NP: every expert's slot count
    return (total + bs - 1) // bs * bs


def stage3_reference(topk_ids, tokens_cnts, *, BLOCK_SIZE: int):
    """(num_tokens_post_pad (1,), max_expert_cnt (1,), cumsum (E + 1,)), int32: the expert
    counts padded up to multiples of BLOCK_SIZE, their total, the largest unpadded count, and
    the exclusive prefix of the padded counts (cumsum[0] = 0 from the zeros buffer)."""
    padded = _padded_counts(tokens_cnts, BLOCK_SIZE)
    cumsum = torch.zeros(padded.numel() + 1, dtype=torch.int64, device=padded.device)
    cumsum[1:] = padded.cumsum(0)
    total = cumsum[-1:].to(torch.int32)
    return total, tokens_cnts[-1].max().reshape(1).to(torch.int32), cumsum.to(torch.int32)


def stage3_cumsum(topk_ids, tokens_cnts, *, BLOCK_SIZE: int):
    """The cumsum stage 3 writes (stage 4b's input)."""
    return stage3_reference(topk_ids, tokens_cnts, BLOCK_SIZE=BLOCK_SIZE)[2]


def stage4_reference(topk_ids, tokens_cnts, cumsum, *, NUM_EXPERTS: int, BLOCK_SIZE: int):
    """(sorted_token_ids, expert_ids), int32. The slots stably sorted by expert, expert e's
    run starting at cumsum[e]; positions no slot takes keep the buffer's fill NUMEL (the padding
    id the MoE GEMM skips). expert_ids[blk] = e for the blocks of expert e's padded run; blocks
    past the last run are not written (the buffer's fill, -1 here)."""
    numel, e, bs, dev = topk_ids.numel(), NUM_EXPERTS, BLOCK_SIZE, topk_ids.device
    em = numel + e * (bs - 1)
    ids = topk_ids.long()
    order = torch.argsort(ids, stable=True)
    counts = torch.bincount(ids, minlength=e)
    starts = torch.cumsum(counts, 0) - counts                         # unpadded run starts
    rank = torch.arange(numel, device=dev) - starts[ids[order]]       # rank within the expert
    sorted_ids = torch.full((em,), numel, dtype=torch.int32, device=dev)
    sorted_ids[cumsum.long()[ids[order]] + rank] = order.to(torch.int32)
    expert_ids = torch.full((-(-em // bs),), -1, dtype=torch.int32, device=dev)
    blocks = torch.arange(expert_ids.numel(), device=dev) * bs
    owner = torch.searchsorted(cumsum.long()[1:], blocks, right=True)  # expert whose run holds it
    written = blocks < cumsum.long()[-1]
    expert_ids[written] = owner[written].to(torch.int32)
    return sorted_ids, expert_ids
