# Thin wrapper: rule reference_ir -> tileport.cpu.reference_ir.run, for every variant of one kernel
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.cpu import reference_ir

w, p = snakemake.wildcards, snakemake.params
out = Path(snakemake.output.dir)
with stage.guarded(snakemake, "reference_ir", each={v: out / f"{v}.json" for v in p.variants}):
    out.mkdir(parents=True, exist_ok=True)
    for v in p.variants:
        files = out / f"{v}.tileirbc", out / f"{v}.tileir", out / f"{v}.json"
        with stage.each_variant(snakemake, "reference_ir", v, files[2], files[:2]):
            d = reference_ir.run(p.op_dir, w.kernel, v, *files, w.op)
            print(v, d["verdict"], d["summary"])
