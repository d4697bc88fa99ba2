# Thin wrapper: rule reference_ir -> tileport.cpu.reference_ir.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.cpu import reference_ir

w, out = snakemake.wildcards, snakemake.output
with stage.guarded(snakemake, "reference_ir"):
    d = reference_ir.run(snakemake.params.op_dir, w.kernel, w.variant, out.bytecode,
                         out.text, out.verdict, w.op)
    print(d["verdict"], d["summary"])
