"""Blocking is per variant (issue 34 item 3; test operator): one kernel launched for f16 and
for i16 (a variant dtype the translator has no rule for) and with a constexpr branch that only
one configuration takes (ct.floordiv, no rule either)."""
import cuda.tile as ct


@ct.kernel
def twice_kernel(x, y, TILE: ct.Constant[int], FLOOR: ct.Constant[bool]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    if FLOOR:
        t = ct.floordiv(t, 2)
    ct.store(y, index=(bid,), tile=t + t)
