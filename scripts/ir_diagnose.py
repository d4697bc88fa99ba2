# Thin wrapper: rule ir_diagnose -> tileport.cpu.ir_diagnose.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import source, stage
from tileport.cpu import ir_diagnose

w, i = snakemake.wildcards, snakemake.input
with stage.guarded(snakemake, "ir_diagnose"):
    d = ir_diagnose.run(i.diff, Path(i.rust).parent.parent, i.source_map, source.kernel_py(snakemake.params.op_dir),
                        snakemake.output.verdict, w.op, w.kernel, w.variant)
    print(d["verdict"], d["summary"])
