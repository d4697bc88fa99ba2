"""Test operator: one small kernel per construct the translator has a rule for.

tests/test_constructs.py ports every kernel here with the real compilers and requires an IR
diff PASS; tests/data/ir/constructs/ keeps their Tile IR for the mutation suite.
"""
import math

import cuda.tile as ct
import numpy as np
from cuda.tile import RoundingMode as RMd

ConstInt = ct.Constant[int]
PAD_ZERO = ct.PaddingMode.ZERO
ROWS = 16
COEFF = 0.044715            # a module-level float constant (loosely typed, as a literal)
FULL_TILE = 1024            # a module-level int constant a constexpr is compared with
NEG_PAD = ct.PaddingMode.NEG_INF          # a padding mode held in a module-level name
MODE = 3                                  # a module-level int a compile-time test reads


def _sigmoid(x):
    """A helper function of a kernel (inlined where it is called)."""
    one = 1.0
    return one / (one + ct.exp(-x))


def _scale_twice(t, scale, TILE: ct.Constant[int]):
    """A helper returning two values, rebinding a parameter, with a compile-time if on a
    constexpr argument."""
    t = ct.astype(t, ct.float32)
    if TILE > 512:
        s = t * scale
    else:
        s = t
    return s, t


def _load_padded(arr, i, TILE: ct.Constant[int], pad):
    """A helper loading with the padding mode it is given."""
    return ct.load(arr, index=(i,), shape=(TILE,), padding_mode=pad)


@ct.kernel
def alias_kernel(x, y, TILE: ConstInt):
    """Compile-time values held in names: a padding mode in a local name, in a module-level name
    and passed to a helper; an array through a local alias; the dtype of a tile."""
    bid = ct.bid(0)
    zero_pad = ct.PaddingMode.ZERO
    src = x
    a = ct.load(src, index=(bid,), shape=(TILE,), padding_mode=zero_pad)
    b = _load_padded(x, bid + 1, TILE, NEG_PAD)
    c = ct.maximum(ct.astype(a, ct.float32), ct.astype(b, ct.float32))
    ct.store(y, index=(bid,), tile=ct.astype(c, a.dtype))


def _store_tile(out, i, t):
    """Stores t and gives nothing back (a helper called as a statement)."""
    ct.store(out, index=(i,), tile=t)


def _store_scaled(out, i, t, scale):
    """Scales t, then stores it through another helper; ends with a bare return."""
    _store_tile(out, i, t * scale)
    return


@ct.kernel
def store_helper_kernel(x, y, TILE: ConstInt):
    """Helpers called as statements for their stores (no return value), one inside the other."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    _store_scaled(y, bid, t, 3.0)


@ct.kernel
def static_arith_kernel(x, y, BM: ConstInt, TILE: ConstInt):
    """Compile-time ifs on constexpr arithmetic (TileGym's `if STAGE & 1:`): bitwise and
    integer arithmetic on constexprs and on a module constant, an unary minus; a
    ct.static_assert on them (checked, nothing emitted)."""
    ct.static_assert(TILE % BM == 0 and MODE > 0, "TILE must be a multiple of BM")
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    if TILE & 512:
        t = t * 2.0
    else:
        t = t + 1.0
    if (BM // 4) % 2 == 0 and -BM < 0:
        t = t - 3.0
    if MODE & 2:
        t = t * 5.0
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def shared_input_kernel(k, v, y, TILE: ConstInt):
    """Two input arrays the launch may bind to one tensor (manifest alias_group): shared borrows
    in the port, both read."""
    bid = ct.bid(0)
    a = ct.load(k, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(v, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(bid,), tile=a * b - a)


@ct.kernel
def numpy_dtype_kernel(x, y, TILE: ConstInt):
    """numpy's dtypes where cuTile's are expected (TileGym's `.astype(np.int32)`)."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(np.float32)
    i = ct.arange(TILE, dtype=np.int32)
    ct.store(y, index=(bid,), tile=ct.astype(t * ct.astype(i, np.float32), y.dtype))


@ct.kernel(occupancy=2, num_ctas=1)
def launch_hints_kernel(x, y, TILE: ConstInt):
    """Hints the launch gives (manifest compiler_hints, TileGym's kernel.replace_hints) over the
    decorator's: occupancy 4 replaces 2, num_ctas 1 stays."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(bid,), tile=t + t)


def _axpb(x, a, b):
    """A named product in a helper, added once: cuTile Python contracts it into an fma."""
    ax = a * x
    return ax + b


@ct.kernel
def helper_fma_kernel(x, y, TILE: ConstInt):
    """fma contraction of a product a helper names (its uses counted in the helper)."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(bid,), tile=_axpb(t, 3.0, t))


@ct.kernel
def fma_choice_kernel(x, y, TILE: ConstInt):
    """Which product an add/sub fuses with: cuTile Python takes the left operand when it is a
    product and fuses only if nothing else reads it -- `wd - t * c` with `wd` read twice stays
    unfused (TileGym's RMSNorm backward) -- else the right one (`u + t * c` fuses)."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    wd = t * 2.0
    c = ct.sum(t * wd, axis=0, keepdims=True)
    r = wd - t * c
    u = t + 1.0
    ct.store(y, index=(bid,), tile=u + r * c)


@ct.kernel
def select_kernel(x, y, TILE: ConstInt):
    """ct.arange (iota), comparisons of tiles (cmpi / cmpf, != unordered), ct.where (select)
    with tile and scalar operands."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    idx = ct.arange(TILE, dtype=ct.int32)
    r = ct.where(idx < 100, t, ct.zeros((TILE,), dtype=x.dtype))
    r = ct.where(t > ct.zeros((TILE,), dtype=x.dtype), r, 0.0)
    r = ct.where(t != t, 1.0, r)
    r = ct.where(idx >= 7, r, -r)
    ct.store(y, index=(bid,), tile=r)


@ct.kernel
def gather_kernel(a, b, TILE: ConstInt):
    """ct.gather / ct.scatter on a 2-D array: a scalar row and a tile of columns, a mask=, a
    padding_value=, check_bounds=False, latency=; cutile's pointer tiles, offsets and masks."""
    row = ct.bid(0)
    cols = ct.arange(TILE, dtype=ct.int32)
    t = ct.gather(a, (row, cols), mask=cols < 500, padding_value=-math.inf, latency=3)
    u = ct.gather(a, (row, cols), check_bounds=False)
    ct.scatter(b, (row, cols), ct.maximum(t, u), mask=cols < 700, check_bounds=False)


@ct.kernel
def gather1d_kernel(x, y, TILE: ConstInt):
    """ct.gather / ct.scatter on a 1-D array with bounds checks (the default)."""
    offs = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(y, offs, ct.gather(x, offs) * 2.0)


@ct.kernel
def intdiv_kernel(x, y, TILE: ConstInt):
    """Integer // (floor), % (Python's sign rule), ct.cdiv (ceil), min/max on scalars (a run-time
    extent, constexpr arithmetic) and // and % on an int32 tile."""
    n = x.shape[0]
    bid = ct.bid(0)
    first = min(bid, n // TILE)
    last = max(n % TILE, ct.cdiv(n, TILE)) + (TILE + 7) // 8
    t = ct.load(x, index=(first,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    lanes = ct.arange(TILE, dtype=ct.int32) - 100
    keep = (lanes % 3) == (lanes // 7) % 2
    ct.store(y, index=(last,), tile=ct.where(keep, t, 0.0))


@ct.kernel
def shapes_kernel(a, b, BM: ConstInt, TILE: ConstInt):
    """ct.expand_dims and x[:, None] / x[None, :, :], ct.broadcast_to, ct.transpose,
    ct.permute, ct.extract, ct.cat, a shape computed from a constexpr (BM // 2)."""
    t = ct.load(a, index=(0, 0), shape=(BM, TILE), padding_mode=ct.PaddingMode.ZERO)
    r = ct.sum(t, axis=1)
    c = r[:, None] + ct.expand_dims(r, axis=1)
    d = ct.broadcast_to(c, (BM, TILE))
    p = ct.permute(ct.transpose(t), (1, 0))
    e = ct.extract(p, (1, 0), shape=(BM // 2, TILE))
    f = ct.cat((e, e), 0)
    ct.store(b, index=(0, 0), tile=d - f + t[None, :, :].reshape((BM, TILE)))


@ct.kernel
def bitwise_kernel(x, y, TILE: ConstInt):
    """& | ^ << >> ~ on int32 tiles (and ct.bitwise_* calls), & | on bool masks, an int tile
    cast to the array's dtype (itof)."""
    idx = ct.arange(TILE, dtype=ct.int32)
    a = (idx & 7) | ct.bitwise_rshift(idx, 2)
    c = ~((a ^ 5) << 1)
    keep = ((idx < 100) | (idx > 900)) & (idx != 5)
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(ct.bid(0),), tile=ct.where(keep, t, ct.astype(c, x.dtype)))


@ct.kernel
def control_kernel(x, y, TILE: ConstInt):
    """Tuple assignment, `a if c else b` (run-time and constexpr), run-time if / elif / else
    rebinding a tile, a while loop with loop-carried values."""
    bid, n = ct.bid(0), x.shape[0]
    j = bid if n > 3 else 0
    j = j if TILE > 512 else 0
    t = ct.load(x, index=(j,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    if bid % 2 == 0:
        t = t * 2.0
    elif bid > 5:
        t = t - 1.0
    else:
        t = t + 1.0
    k = 0
    while k < bid:
        t = t + t
        k += 1
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def helper_kernel(x, y, TILE: ConstInt):
    """Calls of module-level helper functions (inlined, as cuTile Python compiles them)."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    s, f = _scale_twice(t, 2.0, TILE)
    ct.store(y, index=(bid,), tile=ct.astype(_sigmoid(s) + f, y.dtype))


@ct.kernel
def tokens_kernel(x, y, TILE: ConstInt):
    """Memory tokens threaded as cuTile Python threads them: an array loaded then stored in
    place, a loop storing to an array it also reads (carried tokens), a loop whose only op on
    an array is a store at the loop index (a parallel store), stores under a run-time if and
    in a while loop."""
    bid = ct.bid(0)
    n = ct.num_tiles(x, axis=0, shape=(TILE,))
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(x, index=(bid,), tile=t + t)
    offs = ct.arange(TILE, dtype=ct.int32)
    for i in range(bid, n, ct.num_blocks(0)):
        u = ct.gather(x, offs + i * TILE)
        ct.scatter(y, offs + i * TILE, u)
        ct.store(x, index=(i,), tile=u)
    for i in range(bid, n):
        ct.store(y, index=(i,), tile=t)
    if bid % 2 == 0:
        ct.store(y, index=(bid,), tile=ct.load(x, index=(bid + 1,), shape=(TILE,)))
    k = 0
    while k < bid:
        v = ct.load(y, index=(k,), shape=(TILE,))
        ct.store(x, index=(k,), tile=v)
        k += 1


@ct.kernel
def rounding_kernel(x, y, TILE: ConstInt):
    """ct.exp / ct.tanh with rounding_mode= (APPROX, FULL: the default, None), ct.truediv
    with rounding_mode= and flush_to_zero=, the mode through an imported alias (RMd)."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    a = ct.exp(t, rounding_mode=RMd.APPROX)
    b = ct.exp(t, rounding_mode=ct.RoundingMode.FULL)
    c = ct.tanh(t, rounding_mode=RMd.APPROX) + ct.tanh(t, rounding_mode=None)
    d = ct.truediv(a, b, rounding_mode=RMd.APPROX, flush_to_zero=True)
    ct.store(y, index=(bid,), tile=ct.astype(c + d * ct.exp(t), y.dtype))


@ct.kernel
def aliases_kernel(x, y, BM: ConstInt, TILE: ConstInt):
    """Compile-time values under other names: a PaddingMode member bound at module level and
    in the kernel, a tile's dtype (t.dtype), a name bound to a constexpr comparison used as
    check_bounds=, an if on a module-level constant; ct.full filled with a run-time scalar."""
    bid = ct.bid(0)
    zero_pad = ct.PaddingMode.ZERO
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO)
    u = ct.load(x, index=(bid + 1,), shape=(TILE,), padding_mode=zero_pad)
    offs = ct.full((TILE,), bid * TILE, dtype=ct.int32) + ct.arange(TILE, dtype=ct.int32)
    check = TILE != BM * 64
    if BM == ROWS:
        r = t * u + ct.gather(x, offs, check_bounds=check)
    else:
        r = t - u
    ct.store(y, index=(bid,), tile=ct.astype(r * ct.ones((TILE,), dtype=t.dtype), y.dtype))


@ct.kernel
def scan_kernel(a, b, BM: ConstInt, TILE: ConstInt):
    """ct.cumsum along axis 0 (also written -2 / -1 on the last axis of a 1-D tile), forward
    and reverse, of f32, int32 and the array's dtype (cutile's scan_sum)."""
    t = ct.load(a, index=(ct.bid(0), 0), shape=(BM, TILE), padding_mode=ct.PaddingMode.ZERO)
    f = ct.astype(t, ct.float32)
    s = ct.cumsum(f, axis=0) + ct.cumsum(f, 0, reverse=True)
    i = ct.cumsum(ct.arange(TILE, dtype=ct.int32), axis=-1)
    c = ct.cumsum(t, axis=-2)
    r = s + ct.astype(i, ct.float32) + ct.astype(c, ct.float32)
    ct.store(b, index=(ct.bid(0), 0), tile=ct.astype(r, b.dtype))


@ct.kernel
def atomic_kernel(x, y, TILE: ConstInt):
    """ct.atomic_add on a pointer tile: default acq_rel / device (an acquiring, releasing op for
    the memory tokens), relaxed with check_bounds=False, tile-block scope; its old values used,
    then a load and a store ordered after them."""
    bid = ct.bid(0)
    offs = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    old = ct.atomic_add(y, offs, t)
    ct.atomic_add(y, offs, t, check_bounds=False, memory_order=ct.MemoryOrder.RELAXED)
    again = ct.atomic_add(y, offs, old, memory_scope=ct.MemoryScope.BLOCK)
    u = ct.load(x, index=(bid + 1,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(x, index=(bid,), tile=again + u)


@ct.kernel
def return_kernel(x, y, TILE: ConstInt):
    """Early returns from the kernel inside run-time ifs (one after a store, one bare): cuTile
    Python ends the branch with Tile IR's return; the port, guard clauses only, puts the rest
    of the kernel in each if's else (cutile lowers return only in a loop)."""
    bid = ct.bid(0)
    n = x.shape[0]
    if bid * TILE >= n:
        ct.store(y, index=(bid,), tile=ct.zeros((TILE,), dtype=y.dtype))
        return
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    if bid > n // 2:
        return
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def item_kernel(x, y, TILE: ConstInt):
    """t.item() (a one-element tile as a 0-d tile: an int32 scalar index, a loop bound, a
    float to add) and ct.static_assert on constexprs (true for every variant: nothing emitted)."""
    ct.static_assert(TILE % 2 == 0, f"TILE must be even, got {TILE}")
    idx = (ct.arange(1, dtype=ct.int32) + ct.bid(0)).item()
    t = ct.load(x, index=(idx,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    m = ct.load(x, index=(idx + 1,), shape=(1,), padding_mode=ct.PaddingMode.ZERO).item()
    n = ct.astype(ct.sum(ct.reshape(ct.astype(t, ct.float32), (1, TILE)), axis=1, keepdims=True), ct.int32).item()
    for k in range(idx, n):
        t = t + m
    ct.store(y, index=(idx,), tile=t)


@ct.kernel
def views_kernel(a, b, BM: ConstInt, TILE: ConstInt):
    """Options of ct.load / ct.store: order= (a permuted tile: the view's dim_map; "C", "F"),
    check_bounds=False (Tile IR's inbounds), memory_order= / memory_scope= (an acquiring load,
    a releasing store: ordered ops and their memory tokens)."""
    t = ct.load(a, index=(0, ct.bid(0)), shape=(TILE, BM), order=(1, 0), padding_mode=ct.PaddingMode.ZERO)
    u = ct.load(a, index=(ct.bid(0), 0), shape=(BM, TILE), order="C", check_bounds=False, latency=2)
    v = ct.load(a, index=(ct.bid(0), 1), shape=(BM, TILE), memory_order=ct.MemoryOrder.ACQUIRE,
                memory_scope=ct.MemoryScope.DEVICE)
    ct.store(b, index=(ct.bid(0), 1), tile=t, order="F")
    ct.store(b, index=(ct.bid(0), 0), tile=u + v, order=(0, 1), check_bounds=False)
    ct.store(b, index=(ct.bid(0), 2), tile=v, memory_order=ct.MemoryOrder.RELEASE,
             memory_scope=ct.MemoryScope.BLOCK)


@ct.kernel
def dtypes_kernel(x, idx, y, stat, total, TILE: ConstInt):
    """Arrays of their own dtype beside f16 data (an int32 index array, f32 outputs): their
    loads and views, a gather through loaded int32 indices, ct.store / ct.scatter casting an
    f16 tile to the f32 array (implicitly, as cuTile Python does), an f16 tile promoted to f32
    by an f32 tile, a scatter of one element (scalar index, 0-d tile)."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    j = ct.load(idx, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    g = ct.gather(x, j)
    s = ct.astype(t, ct.float32) * 0.5 + g
    ct.store(stat, index=(bid,), tile=s)
    ct.store(y, index=(bid,), tile=t - g)
    ct.scatter(total, bid, ct.sum(g, axis=0))


@ct.kernel
def promote_kernel(x, y, scale, TILE: ConstInt):
    """cuTile Python's typing of numbers: a local bound to a float and a module constant take
    an f16 tile's dtype, a run-time f32 scalar promotes an f16 tile to f32, an int32 extent
    times 0.5 is an f32 scalar, / of ints is f32, a constexpr beside a float is a number;
    ct.minimum of int scalars; compile-time tests on dtypes (and / or / not), a dtype held in
    a name, a constexpr compared with a module constant."""
    bid = ct.bid(0)
    n = x.shape[0]
    first = ct.minimum(n // TILE, bid)
    t = ct.load(x, index=(first,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    c = 0.75
    u = c * t + COEFF * t * t
    half_n = n * 0.5
    v = u * scale + half_n / TILE
    wide = ct.float32 if (x.dtype == ct.float16 and not y.dtype == ct.float32) else x.dtype
    w = ct.astype(v, wide) + n / 4
    if TILE == FULL_TILE or x.dtype == ct.float32:
        w = w * 2.0
    ct.store(y, index=(bid,), tile=ct.astype(w, y.dtype))


@ct.kernel
def loop_split_kernel(x, y, TILE: ConstInt):
    """Loops cuTile Python splits at an `if` on the loop variable (loop_split): `j >= bound`
    with an int32 bound the body does not change (a then-branch only), `bound < j` (read as
    j > bound: split at bound + 1, both branches), `j <= ` a constexpr expression (the
    then-branch below the split), inside a loop whose step is compile-time arithmetic equal to 1
    (4 // 4; a constexpr step is split by cuTile Python too, but the translator splits only a step
    it knows without specialising the entry); and a loop with two such ifs, kept whole."""
    bid = ct.bid(0)
    n = ct.num_tiles(x, axis=0, shape=(TILE,))
    start = bid // 2
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for j in range(0, n):
        t = ct.astype(ct.load(x, index=(j,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
        if j >= start:
            t = t * 2.0
        acc = acc + t
    for j in range(n):
        if start + 1 < j:
            acc = acc - 1.0
        else:
            acc = acc * 0.5
    for j in range(bid, n, 4 // 4):
        if j <= TILE // 512:
            acc = acc + 3.0
        acc = acc * 0.25
    for j in range(n):
        if j < start:
            acc = acc + 1.0
        if j > bid:
            acc = acc - 2.0
    ct.store(y, index=(bid,), tile=ct.astype(acc, y.dtype))


@ct.kernel
def single_trip_kernel(x, y, TILE: ConstInt):
    """A loop of constant bounds that runs once (range(1)) reading `j * TILE + offsets`
    through a gather, and one of two trips (range(2)): cutile knows the index range (it folds
    j * TILE to 0 in the first loop and assumes `bounded<0, 0>` / `bounded<0, 1>` on the
    indices), cuTile Python keeps the multiply."""
    bid = ct.bid(0)
    offsets = ct.arange(TILE, dtype=ct.int32)
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for j in range(1):
        offs = j * TILE + offsets
        acc = acc + ct.astype(ct.gather(x, offs), ct.float32)
    for j in range(2):
        acc = acc + ct.astype(ct.gather(x, j * TILE + offsets), ct.float32)
    ct.store(y, index=(bid,), tile=ct.astype(acc, y.dtype))


@ct.kernel
def reduce_all_kernel(a, b, BM: ConstInt, TILE: ConstInt):
    """Reductions over several axes: ct.max / ct.sum with no axis (every axis, one reduce per
    axis in ascending order, as cuTile Python builds it), a tuple of axes, keepdims=True."""
    t = ct.astype(ct.load(a, index=(ct.bid(0), 0), shape=(BM, TILE), padding_mode=ct.PaddingMode.ZERO),
                  ct.float32)
    m = ct.max(t)
    s = ct.sum(t - m, axis=(1, 0), keepdims=True)
    r = ct.min(ct.sum(t, axis=1))
    ct.store(b, index=(ct.bid(0), 0), tile=ct.astype(t * s + r, b.dtype))


@ct.kernel
def matmul_kernel(a, b, BM: ConstInt):
    """ct.matmul of two 2-D tiles: f16 (accumulates in f16, as cuTile Python's matmul picks
    for it: no cast back) and f32 cast to tf32 (accumulates in f32, cast back to tf32, then to
    f32), each a zero accumulator and one mma."""
    t = ct.load(a, index=(ct.bid(0), 0), shape=(BM, BM), padding_mode=ct.PaddingMode.ZERO)
    h = ct.matmul(t, ct.transpose(t))
    w = ct.astype(t, ct.float32)
    f = ct.astype(ct.matmul(ct.astype(w, ct.tfloat32), ct.astype(w + 1.0, ct.tfloat32)), ct.float32)
    ct.store(b, index=(ct.bid(0), 0), tile=h + ct.astype(f, b.dtype))


def _offsets_times(t, n):
    """A helper whose parameter n carries a constexpr used as a tile shape and a loop bound."""
    offs = ct.arange(n, dtype=ct.int32)
    for i in range(1, n):
        t = t + ct.where(offs == i, t, 0.0)
    return t


@ct.kernel
def scalar_load_kernel(x, y, TILE: ConstInt):
    """ct.load(..., shape=()) of one element (a tile of unit axes reshaped to 0-d); an if on a
    0-d tile's comparison (a run-time float test); a helper's parameter bound to a constexpr
    used as a tile shape; a loop over constant bounds from 1 (cutile assumes its index range)."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    first = ct.load(x, index=(bid * TILE,), shape=())
    if ct.astype(first, ct.float32) < 1.0:
        t = t * 2.0
    t = _offsets_times(t, TILE)
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def dtype_call_kernel(q, y, TILE: ConstInt):
    """A dtype called on a constant (cuTile Python's strictly typed 0-d constant): an f8 zero
    as the padding value of a gather from an f8 array, an f32 two made from an int."""
    offs = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    g = ct.gather(q, offs, padding_value=ct.float8_e4m3fn(0.0))
    ct.store(y, index=(ct.bid(0),), tile=ct.astype(ct.astype(g, ct.float32) * ct.float32(2), y.dtype))


@ct.kernel
def gather2d_pad_kernel(q, a, y, BM: ConstInt, TILE: ConstInt):
    """A 2-D ct.gather with a padding value, out of bounds by check_bounds: an f8 zero (a dtype
    called on a constant) and a float literal. cuTile Python passes the padding into the load
    at every rank (the port too, through a padding tile: no select after the load)."""
    rows = ct.bid(0) * BM + ct.arange(BM, dtype=ct.int32)
    cols = ct.arange(TILE, dtype=ct.int32)
    g = ct.gather(q, (rows[:, None], cols[None, :]), padding_value=ct.float8_e4m3fn(0.0))
    h = ct.gather(a, (rows[:, None], cols[None, :]), padding_value=1.0)
    ct.store(y, index=(ct.bid(0), 0), tile=ct.astype(ct.astype(g, ct.float32) + ct.astype(h, ct.float32), y.dtype))


@ct.kernel
def scan_axis_kernel(a, b, BM: ConstInt, TILE: ConstInt):
    """ct.cumsum along axis 1 of a 2-D tile (cutile scans axis 0 only: the port swaps the axis
    to the front, scans, swaps back) and along axis -1 in reverse."""
    t = ct.astype(ct.load(a, index=(ct.bid(0), 0), shape=(BM, TILE), padding_mode=ct.PaddingMode.ZERO),
                  ct.float32)
    s = ct.cumsum(t, axis=1) + ct.cumsum(t, axis=-1, reverse=True)
    ct.store(b, index=(ct.bid(0), 0), tile=ct.astype(s, b.dtype))


@ct.kernel
def shape_last_kernel(x, y, TILE: ConstInt):
    """x.shape[-1]: the extent of the array's last axis (a negative axis counts from the end)."""
    last = ct.cdiv(x.shape[-1], TILE) - 1
    t = ct.load(x, index=(ct.minimum(ct.bid(0), last),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(ct.bid(0),), tile=t)


@ct.kernel
def fma_rebind_kernel(x, y, TILE: ConstInt):
    """A name that held a multiply, rebound to another value, then added to a product: the
    product (not the name's old multiply) contracts into the fma, as cuTile Python's does."""
    t = ct.astype(ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    acc = t * t
    acc = ct.exp(acc)
    acc = acc + t * 0.5
    ct.store(y, index=(ct.bid(0),), tile=ct.astype(acc, y.dtype))


@ct.kernel
def tiled_atomic_kernel(x, total, TILE: ConstInt):
    """arr.tiled_view(shape).atomic_store_add(index, update): an atomic reduction into one tile
    of a tiled view (relaxed, device scope); an update broadcast to the tile shape and one
    cast implicitly to the array's dtype."""
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    total.tiled_view((TILE,)).atomic_store_add((0,), ct.astype(t, ct.float32) * 2.0)
    total.tiled_view((TILE,), padding_mode=ct.PaddingMode.ZERO).atomic_store_add((1,), t)
    total.tiled_view((TILE,)).atomic_store_add((2,), ct.sum(ct.astype(t, ct.float32), axis=0))


GRID_AXIS = 0                             # a module-level int naming a grid axis


@ct.kernel
def grid_axis_kernel(x, y, TILE: ConstInt):
    """The grid axis as cuTile Python folds it: ct.bid with axis= as a keyword, ct.num_blocks
    with a module-level constant and a local name bound to one."""
    bid = ct.bid(axis=0)
    ax = GRID_AXIS
    last = ct.num_blocks(axis=ax) - 1
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(last - bid,), tile=t)


@ct.kernel
def tile_if_kernel(x, count, y, TILE: ConstInt):
    """A run-time ``if`` on a 0-d bool tile: an int32 scalar compared with one element
    gathered from an array (a 0-d tile)."""
    bid = ct.bid(0)
    limit = ct.gather(count, 0, padding_value=0)
    if bid * TILE < limit:
        t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(y, index=(bid,), tile=t * 2)


@ct.kernel
def i64_constexpr_kernel(ids, out, TILE: ConstInt):
    """An int constexpr beside int64 values, folded to int64 as cuTile Python folds a Python
    number: a gather's padding value and an operand of +."""
    bid = ct.bid(0)
    offs = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    g = ct.gather(ids, offs, mask=offs < ids.shape[0], padding_value=TILE)
    ct.store(out, index=(bid,), tile=g + TILE)


@ct.kernel
def zero_d_index_kernel(x, cum, y, TILE: ConstInt):
    """0-d int32 tiles (gathered elements, Python's max of them) as a loop bound and a tile
    index."""
    bid = ct.bid(0)
    lo = ct.gather(cum, bid, padding_value=0)
    hi = ct.gather(cum, bid + 1, padding_value=0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    for i in range(max(0, hi - lo)):
        ct.store(y, index=(lo + i,), tile=t)


@ct.kernel
def bool_cast_kernel(x, hits, TILE: ConstInt):
    """A bool tile cast to int32 (zero-extended), summed as a count."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    pos = (t > 0).astype(ct.int32)
    ct.store(hits, index=(bid,), tile=pos + ct.sum(pos, axis=0))


@ct.kernel
def slice_kernel(offs, a, b, TILE: ConstInt, BM: ConstInt):
    """Array.slice: a row range with run-time bounds (two gathered offsets), then column
    halves of it with compile-time bounds; loads through one slice, stores through two
    slices of one array (ordered as one array's)."""
    bid = ct.bid(0)
    start = ct.load(offs, index=(bid,), shape=(1,)).item()
    stop = ct.load(offs, index=(bid + 1,), shape=(1,)).item()
    rows = a.slice(axis=0, start=start, stop=stop)
    out = b.slice(axis=0, start=start, stop=stop)
    left = out.slice(axis=1, start=0, stop=BM)
    right = out.slice(axis=-1, start=BM, stop=2 * BM)
    t = ct.load(rows, index=(0, 0), shape=(BM, BM), padding_mode=ct.PaddingMode.ZERO)
    ct.store(left, index=(0, 0), tile=t)
    ct.store(right, index=(0, 0), tile=t * 2)


@ct.kernel
def splat_expr_kernel(x, y, TILE: ConstInt, BM: ConstInt):
    """An int32 scalar expression (run-time values bid // BM, bid % BM times a product of
    constexprs that both compilers fold) added to an int32 tile: the scalar is splatted to the
    tile's shape."""
    bid = ct.bid(0)
    offs = ct.arange(TILE, dtype=ct.int32)
    row = bid // BM
    col = bid % BM
    idx = row * (BM * TILE) + col * TILE + bid * BM + offs
    ct.scatter(y, idx, ct.gather(x, idx) * 2.0)


@ct.kernel
def mma_cast_kernel(a, b, BM: ConstInt):
    """ct.mma of an operand cast to ct.float16 with one of the array's dtype (f16 in every
    variant): both operands are of one dtype in each variant, as ct.mma requires."""
    x = ct.load(a, index=(0, 0), shape=(BM, BM), padding_mode=PAD_ZERO)
    p = ct.astype(ct.exp2(ct.astype(x, ct.float32)), ct.float16)
    acc = ct.mma(p, x, ct.zeros((BM, BM), dtype=ct.float32))
    ct.store(b, index=(0, 0), tile=ct.astype(acc, b.dtype))


def _carry_helper(x, total, scale, TILE: ConstInt):
    bias = ct.zeros((TILE,), dtype=ct.float32)
    for i in range(ct.bid(0), ct.cdiv(x.shape[0], TILE)):
        t = ct.load(x, index=(i,), shape=(TILE,), padding_mode=PAD_ZERO)
        total = total + ct.astype(t, ct.float32) * scale
        scale = scale * 0.5
        bias = bias + scale
    return total + bias


@ct.kernel
def helper_carry_kernel(x, y, TILE: ConstInt):
    """A loop inside an inlined helper rebinding two of its parameters and one of its locals:
    cuTile Python carries them in the order of their names (total, scale, bias -> bias, scale,
    total); the port names them so that cutile orders them alike."""
    total = ct.zeros((TILE,), dtype=ct.float32)
    scale = ct.full((TILE,), 1.0, dtype=ct.float32)
    out = _carry_helper(x, total, scale, TILE)
    ct.store(y, index=(ct.bid(0),), tile=ct.astype(out, y.dtype))


@ct.kernel
def boolop_kernel(x, y, TILE: ConstInt):
    """`and` / `or` of run-time bools (cuTile Python's `if` yielding the rest or the first
    operand), compile-time operands folded as short-circuits, a bool constant tile."""
    bid = ct.bid(0)
    n = x.shape[0]
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    if bid > 2 and bid * TILE < n:
        t = t * 2.0
    if bid % 2 == 0 or bid > 7:
        t = t + 1.0
    if (TILE < FULL_TILE or bid > 1) and bid < n // TILE:
        m = ct.full((TILE,), True, dtype=ct.bool_)
        t = ct.where(m & (t > 0.0), t, 0.0)
    if TILE > FULL_TILE and bid > 3:
        t = t - 1.0
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def split_loop_kernel(x, y, TILE: ConstInt):
    """A `for` loop whose body holds one run-time `if` comparing the loop variable with a value
    bound before the loop: split in two loops, each with the branch it takes (cuTile Python's
    loop_split pass), for >= (a compile-time `and` operand folded away), and for < with
    else (the bound on the left); a loop with two such ifs is not split."""
    bid = ct.bid(0)
    n = ct.num_tiles(x, axis=0, shape=(TILE,))
    m = bid // 2
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for j in range(n):
        t = ct.astype(ct.load(x, index=(j,), shape=(TILE,), padding_mode=PAD_ZERO), ct.float32)
        if (TILE > 0 or bid > 0) and j >= m:
            t = t * 2.0
        acc = acc + t
    for j in range(bid % 3, n):
        if m < j:
            acc = acc - 1.0
        else:
            acc = acc + 1.0
    for j in range(n):
        if j <= m:
            acc = acc * 0.5
        if j > bid:
            acc = acc + 0.5
    ct.store(y, index=(bid,), tile=ct.astype(acc, y.dtype))


@ct.kernel
def scalar_tile_kernel(x, y, TILE: ConstInt):
    """Python's max / min of float tiles (and of a tile and a number): cuTile's maxf / minf; a
    0-d int32 tile loaded from memory as an `if` operand, a loop bound and the bound a loop is
    split at (cuTile Python's scalars are 0-d tiles)."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO), ct.float32)
    u = max(t, ct.max(t, axis=0, keepdims=True) * 0.5)
    u = min(u, 4.0)
    lim = ct.astype(ct.load(x, index=(0,), shape=(1,), padding_mode=PAD_ZERO), ct.int32).reshape(())
    if bid * TILE >= lim:
        u = u * 3.0
    hi = ct.cdiv(lim, TILE)
    for k in range(bid, hi):
        u = u + 1.0
    mstart = lim // TILE
    for k in range(hi):
        if k >= mstart:
            u = u * 0.5
    ct.store(y, index=(bid,), tile=ct.astype(u, y.dtype))


def _sum_loop(x, zacc, lo, hi, TILE: ct.Constant[int], STEP_KIND, BM):
    if BM == 16:
        zacc = zacc * 2.0
    cnt = lo
    for j in range(lo, hi):
        t = ct.astype(ct.load(x, index=(cnt,), shape=(TILE,), padding_mode=PAD_ZERO), ct.float32)
        if STEP_KIND == 1:
            zacc = zacc + t
        else:
            zacc = zacc - t
        cnt += 1
    return zacc


@ct.kernel
def helper_loop_kernel(x, y, TILE: ConstInt, BM: ConstInt):
    """A helper whose loop carries a parameter and a local (cuTile Python orders them by name;
    the port's Rust names keep that order), called under a compile-time test with arithmetic
    (`BM & 1 == 0`) with a compile-time local, and a helper parameter named like the kernel's
    constexpr BM bound to a run-time value (the helper reads its own BM, not the kernel's)."""
    bid = ct.bid(0)
    n = ct.num_tiles(x, axis=0, shape=(TILE,))
    acc = ct.zeros((TILE,), dtype=ct.float32)
    if BM & 1 == 0:
        kind = 2 - BM // 16
        acc = _sum_loop(x, acc, bid % 2, n, TILE, kind, bid)
    ct.store(y, index=(bid,), tile=ct.astype(acc, y.dtype))


@ct.kernel
def const_product_kernel(x, y, TILE: ConstInt, BM: ConstInt):
    """Constexpr arithmetic inside run-time expressions (`bid * (BM * TILE)`): cuTile Python
    folds it to one constant (the port specialises those constexprs)."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO)
    base = bid * (BM * TILE) + (TILE - BM)
    pos = ct.arange(TILE, dtype=ct.int32) + base
    t = ct.where(pos < x.shape[0] * BM, t, 0.0)
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def dead_yield_kernel(x, y, TILE: ConstInt):
    """A value a run-time if rebinds that nothing reads after it is no result of the if
    (cuTile Python's dead code elimination): in straight code, and in a loop whose next
    iteration rebinds it first; a value read after the if stays a result."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO), ct.float32)
    w = t - 2.0
    if bid > 3:
        w = w + 1.0
        t = t + w
    w = t - 3.0
    n = x.shape[0] // TILE
    for j in range(n):
        v = t - 0.5
        if j % 2 == 0:
            v = v + 1.0
            t = t + v
        t = t + 1.0
    ct.store(y, index=(bid,), tile=ct.astype(t + w, y.dtype))
