"""Test operator: constexpr branches (one changes the tile rank) and float/bool constexprs."""
import cuda.tile as ct

ConstInt = ct.Constant[int]
ConstBool = ct.Constant[bool]


@ct.kernel
def act_kernel(x, y, BM: ConstInt, TILE: ConstInt, GELU: ConstBool, SCALE: ct.Constant[float]):
    bid = ct.bid(0)
    if BM == 1:
        t = ct.reshape(ct.load(x, index=(bid, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO), (TILE,))
        t = ct.astype(t, ct.float32)
    else:
        t = ct.astype(ct.load(x, index=(bid, 0), shape=(BM, TILE), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    if GELU:
        r = 0.5 * t * (1.0 + ct.tanh(0.7978845608 * t))
    elif SCALE > 1.0:
        r = ct.maximum(t, 0.0) * SCALE
    else:
        r = ct.maximum(t, 0.0)
    if BM == 1:
        ct.store(y, index=(bid, 0), tile=ct.reshape(ct.astype(r, y.dtype), (1, TILE)))
    else:
        ct.store(y, index=(bid, 0), tile=ct.astype(r, y.dtype))
