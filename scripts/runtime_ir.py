# Thin wrapper: rule runtime_ir -> tileport.cpu.runtime_ir.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.cpu import runtime_ir

w, out = snakemake.wildcards, snakemake.output
Path(out.artefacts).mkdir(parents=True, exist_ok=True)   # a directory even if the job crashes
with stage.guarded(snakemake, "runtime_ir"):
    diffs = {v: str(Path(snakemake.input.ir_diff) / f"{v}.json") for v in snakemake.params.variants}
    d = runtime_ir.run(snakemake.params.op_dir, w.op, w.kernel, snakemake.input.build, diffs, out.verdict,
                       out.artefacts,
                       target=snakemake.params.target)
    print(d["verdict"], d["summary"])
    print("cost:", d["details"].get("cost"))
