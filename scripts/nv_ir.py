# Thin wrapper: rule nv_ir -> tileport.nvidia.port.dump (NVIDIA's entry compiled for each reference variant
# of one kernel)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.nvidia import port as nv_port

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
out = Path(snakemake.output.dir)
with stage.guarded(snakemake, "nv_ir", each={v: out / f"{v}.json" for v in p.variants}):
    out.mkdir(parents=True, exist_ok=True)
    for v in p.variants:
        files = out / f"{v}.tileirbc", out / f"{v}.tileir", out / f"{v}.json"
        with stage.each_variant(snakemake, "nv_ir", v, files[2], files[:2]):
            d = nv_port.dump(p.op_dir, w.op, w.kernel, v, i.build, *files, target=p.target,
                             attempt=snakemake.resources.attempt, other_build=i.other)
            print(v, d["verdict"], d["summary"])
