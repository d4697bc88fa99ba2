"""Test operator: small kernels for the cuda.tile names no construct kernel spelled yet
(docs/cuda-tile-api.yaml). tests/test_api_table.py ports them with the real compilers and
requires an IR diff PASS; their Tile IR joins tests/data/ir/constructs/ for the mutation suite.
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO


@ct.kernel
def api_math_kernel(x, y, TILE: ConstInt):
    """Unary math of cuda.tile on an f32 tile (abs, ceil, floor, sin, cos, log, log2) and the
    flagged forms: rsqrt / exp2 with flush_to_zero=, sqrt with rounding_mode= and
    flush_to_zero=, ct.add / ct.sub / ct.mul with rounding_mode= and flush_to_zero=, ct.negative."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ZERO), ct.float32)
    a = ct.abs(t) + ct.ceil(t) - ct.floor(t)
    b = ct.sin(t) * ct.cos(t)
    c = ct.log(a) + ct.log2(a)
    d = ct.rsqrt(a, flush_to_zero=True) + ct.exp2(t, flush_to_zero=True)
    e = ct.sqrt(a, rounding_mode=ct.RoundingMode.RZ, flush_to_zero=True)
    f = ct.add(b, c, rounding_mode=ct.RoundingMode.RP, flush_to_zero=True)
    g = ct.sub(f, d, rounding_mode=ct.RoundingMode.RM)
    h = ct.mul(g, e, flush_to_zero=True)
    ct.store(y, index=(bid,), tile=ct.astype(ct.negative(h), y.dtype))


@ct.kernel
def api_minmax_kernel(a, b, BM: ConstInt, TILE: ConstInt):
    """ct.maximum / ct.minimum with propagate_nan= and flush_to_zero=; ct.min and ct.max
    reductions along axis= with keepdims=; ct.prod along axis 1."""
    bid = ct.bid(0)
    t = ct.astype(ct.load(a, index=(bid, 0), shape=(BM, TILE), padding_mode=ZERO), ct.float32)
    u = ct.maximum(t, 0.5, propagate_nan=True) + ct.minimum(t, -0.5, flush_to_zero=True)
    lo = ct.min(u, axis=1, keepdims=True)
    hi = ct.max(u, axis=0, keepdims=False)
    p = ct.prod(u, axis=1, keepdims=True)
    ct.store(b, index=(bid, 0), tile=ct.astype(u - lo + hi * p, b.dtype))


@ct.kernel
def api_bits_kernel(x, y, TILE: ConstInt):
    """The ct.bitwise_* calls and >> on an int32 tile; Tile methods extract / permute /
    transpose and ct.transpose with axis0= / axis1= on a 2-D tile; Tile.ndim."""
    bid = ct.bid(0)
    i = ct.arange(TILE, dtype=ct.int32) + bid
    m = ct.bitwise_and(i, 12) + ct.bitwise_or(i, 3) + ct.bitwise_xor(i, 5)
    n = ct.bitwise_lshift(m, 2) + ct.bitwise_not(i) + (m >> 1)
    t = ct.reshape(ct.astype(n, ct.float16), (32, TILE // 32))
    if t.ndim == 2:
        t = t.transpose() + ct.transpose(t, axis0=0, axis1=1)
    u = t.permute((1, 0)).extract((0, 0), (TILE // 32, 32))
    ct.store(y, index=(bid,), tile=ct.reshape(u, (TILE,)))


@ct.kernel
def api_atomic_kernel(x, flags, y, TILE: ConstInt):
    """The integer atomics on an int32 array (and, or, xor, max, min, xchg, cas) with
    memory_order= / memory_scope= / check_bounds=, their old values used."""
    bid = ct.bid(0)
    offs = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    v = offs & 7
    a = ct.atomic_and(flags, offs, v, memory_order=ct.MemoryOrder.RELAXED)
    o = ct.atomic_or(flags, offs, a, memory_scope=ct.MemoryScope.BLOCK)
    e = ct.atomic_xor(flags, offs, o, check_bounds=False)
    hi = ct.atomic_max(flags, offs, e, memory_order=ct.MemoryOrder.ACQUIRE)
    lo = ct.atomic_min(flags, offs, hi, memory_order=ct.MemoryOrder.RELEASE, memory_scope=ct.MemoryScope.SYS)
    x2 = ct.atomic_xchg(flags, offs, lo, check_bounds=True)
    c = ct.atomic_cas(flags, offs, x2, v, memory_order=ct.MemoryOrder.ACQ_REL,
                      memory_scope=ct.MemoryScope.DEVICE, check_bounds=True)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(bid,), tile=t + ct.astype(c, y.dtype))


@ct.kernel
def api_views_kernel(a, b, BM: ConstInt, TILE: ConstInt):
    """ct.load / ct.store with allow_tma= and latency=, ct.num_tiles, ct.cumsum along axis 1,
    ct.sum with keepdims=, Array.ndim in a compile-time test."""
    bid = ct.bid(0)
    n = ct.num_tiles(a, axis=1, shape=(BM, TILE))
    t = ct.load(a, index=(bid, 0), shape=(BM, TILE), padding_mode=ZERO, allow_tma=False, latency=3)
    r = ct.arange(TILE, dtype=ct.int32)
    s = ct.cumsum(ct.astype(t, ct.float32), axis=1) + ct.astype(r, ct.float32) * n
    if a.ndim == 2:
        s = s + ct.sum(s, axis=1, keepdims=True)
    ct.store(b, index=(bid, 0), tile=ct.astype(s, b.dtype), allow_tma=True, latency=2)


@ct.kernel
def api_more_kernel(x, flags, y, TILE: ConstInt):
    """Casts through the integer and float dtypes of cuda.tile (int8 ... uint64, bfloat16,
    float64, float8_e5m2) with astype's rounding_mode=; ct.mul with rounding_mode=, ct.sub
    with flush_to_zero=; the atomics' other keywords; ct.scatter with latency=."""
    bid = ct.bid(0)
    offs = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ZERO)
    i = ct.astype(ct.astype(ct.astype(t, ct.int8), ct.int16), ct.int64)
    u = (ct.astype(ct.astype(t, ct.uint8), ct.float32) + ct.astype(ct.astype(t, ct.uint16), ct.float32)
         + ct.astype(ct.astype(t, ct.uint32), ct.float32) + ct.astype(ct.astype(t, ct.uint64), ct.float32))
    f = ct.astype(ct.astype(i, ct.float64), ct.float32, rounding_mode=ct.RoundingMode.RZ) + u
    g = ct.astype(ct.astype(ct.astype(t, ct.bfloat16), ct.float8_e5m2), ct.float32)
    h = ct.sub(ct.mul(f, g, rounding_mode=ct.RoundingMode.RN), f, flush_to_zero=True)
    v = offs & 3
    a = ct.atomic_and(flags, offs, v, check_bounds=False, memory_scope=ct.MemoryScope.BLOCK)
    b = ct.atomic_or(flags, offs, a, check_bounds=True, memory_order=ct.MemoryOrder.RELAXED)
    c = ct.atomic_xor(flags, offs, b, memory_order=ct.MemoryOrder.ACQ_REL, memory_scope=ct.MemoryScope.DEVICE)
    d = ct.atomic_max(flags, offs, c, check_bounds=False, memory_scope=ct.MemoryScope.DEVICE)
    e = ct.atomic_min(flags, offs, d, check_bounds=False)
    w = ct.atomic_xchg(flags, offs, e, memory_order=ct.MemoryOrder.RELAXED, memory_scope=ct.MemoryScope.BLOCK)
    ct.scatter(y, offs, ct.astype(h, y.dtype) + ct.astype(w, y.dtype), latency=2)


@ct.kernel
def api_neg_kernel(x, s, y, TILE: ConstInt):
    """ct.negative of a tile; ct.astype of a Python float (a 0-d constant of y's dtype) scattered
    at a scalar index; .item() of a gather at a scalar index (a 0-d f32 value) cast to f32;
    check_bounds= the negation of a local bool that compares two constexprs (Unsloth's
    ``no_padding = TILE_N == n_cols``)."""
    bid = ct.bid(0)
    padded = TILE != 1024
    offs = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    t = ct.astype(ct.gather(x, offs, check_bounds=not padded, padding_value=0.0), ct.float32)
    k = ct.astype(ct.gather(s, bid, check_bounds=False).item(), ct.float32)
    ct.scatter(y, offs, ct.astype(ct.negative(t) * k, y.dtype), check_bounds=not padded)
    ct.scatter(y, bid, ct.astype(0.0, y.dtype))


@ct.kernel
def api_fold_kernel(x, y, shift: float, TILE: ConstInt):
    """A run-time f32 scalar cast to y's dtype (cuTile Python's 0-d tile and its ftof: Liger's
    modulated RMSNorm ``ct.astype(offset, x.dtype)``) added to a tile; 1.0 / an int computed
    from a constexpr (a Python float cuTile Python folds to a constant: Liger's GroupNorm
    ``inv_N = 1.0 / (CHANNELS_PER_GROUP * TOTAL_HIDDEN_SIZE)``)."""
    bid = ct.bid(0)
    n = TILE * 3
    inv = 1.0 / n
    offs = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    o = ct.astype(shift, y.dtype)
    t = ct.gather(x, offs) + o
    ct.scatter(y, offs, ct.astype(ct.astype(t, ct.float32) * inv, y.dtype))


@ct.kernel
def api_nested_fma_kernel(x, y, TILE: ConstInt):
    """A product bound in a loop nested in a loop and read once there is one fma, though an
    earlier loop binds and reads the same name twice (no fma there): cuTile Python counts the
    uses of each value (Liger's GroupNorm backward ``wdy``)."""
    bid = ct.bid(0)
    offs = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    t = ct.astype(ct.gather(x, offs), ct.float32)
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for i in range(2):
        w = t * 3.0
        acc = acc + w + w
    for j in range(2):
        for k in range(2):
            w = t * 5.0
            acc = w - acc
    ct.scatter(y, offs, ct.astype(acc, y.dtype))


@ct.kernel
def api_cmp_kernel(x, y, TILE: ConstInt):
    """The comparisons spelled as functions (Liger's cross-entropy: ct.equal(col_idx, y),
    ct.less(col_idx, n_cols), ct.greater(block_max, cur)): a float tile with a number, an int
    tile with a scalar and with a tile, the bool masks combined by ct.bitwise_and / _or."""
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    offs = ct.arange(TILE, dtype=ct.int32)
    m = ct.bitwise_and(ct.greater(t, 0.0), ct.less(offs, 1000))
    m = ct.bitwise_or(m, ct.equal(offs, bid))
    m = ct.bitwise_and(m, ct.not_equal(t, 1.0))
    m = ct.bitwise_or(m, ct.less_equal(t, -2.0))
    m = ct.bitwise_and(m, ct.greater_equal(offs, offs * 0 + 3))
    ct.store(y, index=(bid,), tile=ct.where(m, t, 0.0))


@ct.kernel
def api_gather_view_kernel(a, idx, b, BM: ConstInt, TILE: ConstInt):
    # BM rows of a listed in idx (a gathered index tile), TILE columns: ct.load_advanced_indexing
    bid = ct.bid(0)
    rows = ct.gather(idx, bid * BM + ct.arange(BM, dtype=ct.int32), padding_value=0)
    t = ct.load_advanced_indexing(a, (rows, ct.Slice(0, TILE)), padding_mode=ct.PaddingMode.ZERO,
                                  latency=3, allow_tma=False)
    ct.store(b, index=(bid, 0), tile=t)
