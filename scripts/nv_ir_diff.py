# Thin wrapper: rule nv_ir_diff -> tileport.nvidia.port.diff (tileport's IR diff on NVIDIA's port), for
# every variant of one kernel
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.nvidia import port as nv_port

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
out = Path(snakemake.output.dir)
ref, nv = Path(i.ref) / w.kernel, Path(i.nv)
with stage.guarded(snakemake, "nv_ir_diff", each={v: out / f"{v}.json" for v in p.variants}):
    out.mkdir(parents=True, exist_ok=True)
    for v in p.variants:
        with stage.each_variant(snakemake, "nv_ir_diff", v, out / f"{v}.json"):
            d = nv_port.diff(w.op, w.kernel, v, ref / f"{v}.tileir", ref / f"{v}.json", nv / f"{v}.tileir",
                             nv / f"{v}.json", out / f"{v}.json", attempt=snakemake.resources.attempt)
            print(v, d["verdict"], d["summary"])
