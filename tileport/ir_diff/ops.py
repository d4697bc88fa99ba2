"""The Tile IR op vocabulary: the op names tileirdisasm prints (cuda_tile dialect of CUDA 13)
and how the diff classes them (commutative, region, cast, memory, effectful; verdict category)."""
from __future__ import annotations

KNOWN_OPS = frozenset("""
absf absi addf addi alloca andi assert assume atan2 atomic_cas_tko atomic_red_view_tko
atomic_rmw_tko bitcast break broadcast cat ceil cmpf cmpi constant continue cos cosh divf
divi exp exp2 exti extract floor fma for fpowf fpowi ftof ftoi gdc_launch_dependents_tko
gdc_wait_tko get_global get_index_space_shape get_num_tile_blocks get_tensor_shape
get_tile_block_id global if insert int_to_ptr iota itof join_tokens load_ptr_tko
load_view_tko log log2 loop make_gather_scatter_view make_partition_view make_strided_view
make_tensor_view make_token maxf maxi memory_fence_alias_tko minf mini mmaf mmaf_scaled
mmai mulf mulhii muli negf negi offset ori pack permute print_tko ptr_to_int ptr_to_ptr
reduce remf remi reshape return rsqrt scan select shli shri sin sinh sqrt store_ptr_tko
store_view_tko subf subi tan tanh trunci unpack xori yield
multimem_load_reduce_view_tko multimem_reduce_view_tko multimem_store_view_tko
gather scatter splat
""".split())

COMMUTATIVE = frozenset("addf mulf maxf minf addi muli maxi mini andi ori xori".split())
TERMINATORS = frozenset("return yield continue break".split())
REGION_OPS = frozenset("for loop if reduce scan".split())
CAST_OPS = frozenset("ftof itof ftoi exti trunci bitcast ptr_to_int int_to_ptr ptr_to_ptr".split())
MEMORY_OPS = frozenset("""make_partition_view make_tensor_view make_strided_view
make_gather_scatter_view get_index_space_shape get_tensor_shape make_token join_tokens
offset memory_fence_alias_tko alloca global get_global""".split())


def _is_effectful_name(opname: str) -> bool:
    """Ops with a side effect (or kept as if they had one: loads)."""
    return (opname.startswith(("load", "store", "atomic", "multimem", "gdc_", "print"))
            or opname in ("assert", "memory_fence_alias_tko", "scatter", "gather"))


def category_of(opname: str) -> str:
    """Verdict category for a divergence at an op named ``opname``.

    memory: loads/stores/views/atomics/gather/scatter/tokens; reduction: reduce/scan;
    cast: ftof/itof/...; control_flow: for/if/loop/terminators; constant; else math.
    """
    if (opname.startswith(("load", "store", "atomic", "multimem"))
            or opname in MEMORY_OPS or opname in ("gather", "scatter")):
        return "memory"
    if opname in ("reduce", "scan"):
        return "reduction"
    if opname in CAST_OPS:
        return "cast"
    if opname in REGION_OPS or opname in TERMINATORS:
        return "control_flow"
    if opname == "constant":
        return "constant"
    return "math"
