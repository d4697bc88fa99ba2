"""Test operator: one small kernel per construct the translator has a rule for.

tests/test_constructs.py ports every kernel here with the real compilers and requires an IR
diff PASS; tests/data/ir/constructs/ keeps their Tile IR for the mutation suite.
"""
import math

import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
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
