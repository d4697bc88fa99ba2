import glob, sys, os
from pathlib import Path
import cuda.tile._ir.ops as ops
import cuda.tile._bytecode as bc
def gen(self, ctx):
    cache = getattr(ctx, "_tp_bid", None)
    if cache is None or cache[0] is not ctx.builder:
        res_typeid = ctx.typeid_of(self.result_var)
        cache = (ctx.builder, bc.encode_GetTileBlockIdOp(ctx.builder, res_typeid, res_typeid, res_typeid))
        ctx._tp_bid = cache
    return cache[1][self.axis]
if os.environ.get("H10"): ops.TileBid.generate_bytecode = gen
if os.environ.get("H9"):
    import cuda.tile._bytecode.encodings as enc
    print([n for n in dir(enc) if "Entry" in n or "Hint" in n])
from tileport.cpu import runtime_ir
op="lg_group_norm"; k="_group_norm_bwd_kernel"
v={Path(p).stem: p for p in glob.glob(f"results/{op}/ir_diff/{k}/*.json")}
v={a:b for a,b in v.items() if "NUM_CHANNELS12" in a and not a.startswith("f32")}
d=runtime_ir.run(f"operators/{op}", op, k, f"results/{op}/rust/build.json", v, sys.argv[1] + "/out.json", sys.argv[1] + "/art", archs=("sm_90",))
print(d["verdict"], d["summary"])
