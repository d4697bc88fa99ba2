"""Test operator: what a port must keep (issue 13's four translator faults, with their right values).

* ``ct.full(.., -0.0, dtype=x.dtype)``: the sign of zero (and inf, NaN, subnormal bits) kept;
* ``ct.astype`` to the tile's own dtype with a rounding mode: no op (E = f32 and f32 -> f32);
* the method form ``t.astype(...)`` / ``t.reshape(...)``;
* ``@ct.kernel(occupancy=, num_ctas=ByTarget(..))`` and load/store latency / allow_tma: carried.
"""
import math

import cuda.tile as ct

ConstInt = ct.Constant[int]
OCCUPANCY = 2


@ct.kernel(occupancy=OCCUPANCY, num_ctas=ct.ByTarget(sm_80=1, default=2))
def fidelity_kernel(x, y, TILE: ConstInt):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO, latency=4,
                allow_tma=False)
    s = t + ct.full((TILE,), -0.0, dtype=x.dtype)
    f = s.astype(ct.float32)
    f = ct.astype(f, ct.float32, rounding_mode=ct.RoundingMode.RZ)
    f = ct.minimum(f, ct.full((TILE,), math.inf, dtype=ct.float32))
    f = ct.maximum(f, ct.full((TILE,), 1e-45, dtype=ct.float32))
    g = ct.astype(f, x.dtype, rounding_mode=ct.RoundingMode.RZ) * ct.full((TILE,), 6e-8, dtype=x.dtype)
    g = g.reshape((1, TILE)).reshape((TILE,))
    ct.store(y, index=(bid,), tile=g, latency=2)
