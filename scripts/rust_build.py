# Thin wrapper: rule rust_build -> tileport.cpu.rust_ir.build
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage
from tileport.cpu import rust_ir

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

op = snakemake.wildcards.op
with stage.guarded(snakemake, "rust_build"):
    verdicts = {Path(v).stem: v for v in snakemake.input.verdicts}
    d = rust_ir.build(op, Path(snakemake.output.verdict).parent, verdicts,
                      snakemake.output.verdict, snakemake.log[0])
    print(d["verdict"], d["summary"])
