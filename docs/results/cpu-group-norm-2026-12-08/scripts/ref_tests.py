"""The reference-side tests of lg_group_norm's backward (README.md beside this folder): compile the
two 16x12x3x4096 cases (f16, bf16) with `runtime_ir` for sm_90 after changing one thing in how
cuda-tile 1.7.0 writes the reference's Tile IR, in this process only.

Usage, from the repository root after the main job built results/lg_group_norm:
    PYTHONPATH=. TILEPORT_TILEIR_CACHE=off python <this file> TEST OUT_DIR
TEST is one of the functions below (bid_bounded, loop_bounded, ...); `fold_col` needs
`hi * BLOCK_SIZE` replaced by `0 * BLOCK_SIZE` in results/lg_group_norm/src/kernel.py first.
"""

import glob
import sys
from pathlib import Path


def fold_col():
    """Test 3: nothing to patch (the kernel.py edit above is the test)."""


def bid_bounded():
    """Test 4: each block id assumed bounded<0, ?>, as the port's are."""
    import cuda.tile._ir.ops as ops

    plain = ops.bid
    ops.bid = lambda axis: ops.assume_bounded(plain(axis), 0, None)


def loop_bounded():
    """Test 5: the index of a `for` with constant bounds assumed within them, as the port's."""
    import cuda.tile._bytecode as bc
    import cuda.tile._ir.control_flow_ops as cfo

    plain = cfo.Loop.generate_bytecode

    def generate(self, ctx):
        if not (self.is_for_loop and self.start.is_constant() and self.stop.is_constant()):
            return plain(self, ctx)
        index, bounds = self.induction_var, bc.Bounded(lb=self.start.get_constant(), ub=self.stop.get_constant() - 1)
        setter, own = ctx.set_value, vars(ctx).get("set_value")

        def set_value(var, value):
            if var is index:
                value = bc.encode_AssumeOp(ctx.builder, ctx.typeid_of(var), value, bounds)
            setter(var, value)

        ctx.set_value = set_value
        try:
            return plain(self, ctx)
        finally:
            if own is None:
                vars(ctx).pop("set_value", None)
            else:
                ctx.set_value = own

    cfo.Loop.generate_bytecode = generate


def no_store_divby():
    """Test 6: no divisibility assumed on the operands of a pointer store."""
    import cuda.tile._passes.propagate_divby as pd

    pd._OPS_NEED_ASSUME = tuple(c for c in pd._OPS_NEED_ASSUME if c.__name__ != "StorePointer")


def divby_everywhere():
    """Test 7: a div_by on every operand with a known divisor (so after each shape's bounded, the
    port's order), not only on those of tensor views and pointer loads and stores."""
    import cuda.tile._passes.propagate_divby as pd
    from cuda.tile._ir.ir import Operation

    pd._OPS_NEED_ASSUME = (Operation,)


def bid_once():
    """Test 8: one get_tile_block_id op for every ct.bid of a function."""
    import cuda.tile._bytecode as bc
    import cuda.tile._ir.ops as ops

    def generate(self, ctx):
        made = getattr(ctx, "_bids", None)
        if made is None or made[0] is not ctx.builder:
            t = ctx.typeid_of(self.result_var)
            ctx._bids = made = (ctx.builder, bc.encode_GetTileBlockIdOp(ctx.builder, t, t, t))
        return made[1][self.axis]

    ops.TileBid.generate_bytecode = generate


def no_entry_hints():
    """Test 10: no optimization_hints on the entry where every arch's hints are empty."""
    import cuda.tile._bytecode.writer as w

    cls = next(c for c in vars(w).values() if isinstance(c, type) and "global_section" in vars(c))
    plain = cls.function

    def function(self, *a, **k):
        k["hints"] = {arch: h for arch, h in k["hints"].items() if h.as_dictionary().items}
        return plain(self, *a, **k)

    cls.function = function


if __name__ == "__main__":
    test, out = sys.argv[1], Path(sys.argv[2])
    globals()[test]()
    from tileport.cpu import runtime_ir

    op, kernel = "lg_group_norm", "_group_norm_bwd_kernel"
    diffs = {Path(p).stem: p for p in glob.glob(f"results/{op}/ir_diff/{kernel}/*.json")}
    diffs = {v: p for v, p in diffs.items() if "NUM_CHANNELS12" in v and not v.startswith("f32")}
    d = runtime_ir.run(f"operators/{op}", op, kernel, f"results/{op}/rust/build.json", diffs, out / "out.json",
                       out / "art", archs=("sm_90",))
    print(d["verdict"], d["summary"])
