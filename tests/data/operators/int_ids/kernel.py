"""Test operator: a kernel whose variant dtype is an int (int32 / int64 ids, as TileGym's MoE
routing takes topk ids of either); tests/test_constructs.py ports it with the real compilers.
"""
import cuda.tile as ct


@ct.kernel
def int_variant_kernel(ids, y, TILE: ct.Constant[int]):
    """Arrays of the variant's dtype where that dtype is an int (int32 / int64 ids): their
    concrete element type in an entry per dtype; an int32 tile beside them widened to it."""
    bid = ct.bid(0)
    g = ct.load(ids, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    lanes = ct.arange(TILE, dtype=ct.int32)
    ct.store(y, index=(bid,), tile=ct.where(g > lanes, g * 2, 1))
