"""Test operator: rounding modes, flush-to-zero, NaN propagation and explicit arithmetic calls."""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def numerics_kernel(x, y, z, TILE: ConstInt):
    bid = ct.bid(0)
    a = ct.astype(ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    b = ct.astype(ct.load(y, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    q = ct.truediv(a, b, rounding_mode=ct.RoundingMode.APPROX, flush_to_zero=True)
    e = ct.exp2(q, flush_to_zero=True)
    r = ct.sqrt(ct.maximum(e, b, propagate_nan=True), rounding_mode=ct.RoundingMode.RZ)
    p = ct.mul(r, a, flush_to_zero=True)
    s = ct.add(p, q, flush_to_zero=True)
    t = ct.sub(s, ct.rsqrt(e, flush_to_zero=True), rounding_mode=ct.RoundingMode.RN)
    ct.store(z, index=(bid,), tile=ct.astype(t, z.dtype, rounding_mode=ct.RoundingMode.RZ))
