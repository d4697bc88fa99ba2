"""Test 10: the reference's entry without cuda-tile's empty optimization_hints (cutile writes none)."""
import glob, sys
from pathlib import Path
import cuda.tile._bytecode.writer as w
cls = next(c for c in vars(w).values() if isinstance(c, type) and "function" in vars(c) and "global_section" in vars(c))
orig = cls.function


def function(self, *a, **k):
    def drop(hints):
        return {arch: h for arch, h in hints.items() if h.as_dictionary().items}
    if "hints" in k:
        k["hints"] = drop(k["hints"])
    else:
        a = (*a[:4], drop(a[4]), *a[5:])
    return orig(self, *a, **k)


cls.function = function
from tileport.cpu import runtime_ir
op = "lg_group_norm"; k = "_group_norm_bwd_kernel"
v = {Path(p).stem: p for p in glob.glob(f"results/{op}/ir_diff/{k}/*.json")}
v = {a: b for a, b in v.items() if "NUM_CHANNELS12" in a and not a.startswith("f32")}
d = runtime_ir.run(f"operators/{op}", op, k, f"results/{op}/rust/build.json", v, sys.argv[1] + "/out.json",
                   sys.argv[1] + "/art", archs=("sm_90",))
print(d["verdict"], d["summary"])
