import glob, sys, os
from pathlib import Path
import cuda.tile._passes.propagate_divby as pd
from cuda.tile._ir.ops import AssumeBounded
orig = pd.add_divby_pass
def add_divby_pass(root_block, df_result):
    candidates = set()
    for op in root_block.traverse():
        if isinstance(op, pd._OPS_NEED_ASSUME):
            candidates.update(var.name for var in op.all_inputs())
        if isinstance(op, AssumeBounded):
            candidates.update(v.name for v in op.result_vars)
    mapper = pd.Mapper(root_block.ctx)
    pd._rewrite_block(root_block, df_result, mapper, candidates)
pd.add_divby_pass = add_divby_pass
import cuda.tile._compile as cc
for mod in list(sys.modules.values()):
    if getattr(mod, "add_divby_pass", None) is orig:
        mod.add_divby_pass = add_divby_pass
from tileport.cpu import runtime_ir
op="lg_group_norm"; k="_group_norm_bwd_kernel"
v={Path(p).stem: p for p in glob.glob(f"results/{op}/ir_diff/{k}/*.json")}
v={a:b for a,b in v.items() if "NUM_CHANNELS12" in a and not a.startswith("f32")}
d=runtime_ir.run(f"operators/{op}", op, k, f"results/{op}/rust/build.json", v, sys.argv[1] + "/out.json", sys.argv[1] + "/art", archs=("sm_90",))
print(d["verdict"], d["summary"])
