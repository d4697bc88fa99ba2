import glob, sys
from pathlib import Path
from tileport.cpu import runtime_ir
op="lg_group_norm"; k="_group_norm_bwd_kernel"
v={Path(p).stem: p for p in glob.glob(f"results/{op}/ir_diff/{k}/*.json")}
v={a:b for a,b in v.items() if "NUM_CHANNELS12" in a and not a.startswith("f32")}
d=runtime_ir.run(f"operators/{op}", op, k, f"results/{op}/rust/build.json", v, "/tmp/rtx/out.json", "/tmp/rtx/art", archs=("sm_90",))
print(d["verdict"], d["summary"])
