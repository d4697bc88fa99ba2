# Thin wrapper: rule reference_ir -> tileport.cpu.reference_ir.run, for every variant of every kernel of one operator
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage
from tileport.cpu import reference_ir

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, p = snakemake.wildcards, snakemake.params
out = Path(snakemake.output.dir)
each = {(k, v): out / k / f"{v}.json" for k, vs in p.variants.items() for v in vs}
with stage.guarded(snakemake, "reference_ir", each=each):
    for kernel, variants in p.variants.items():
        (out / kernel).mkdir(parents=True, exist_ok=True)
        for v in variants:
            files = out / kernel / f"{v}.tileirbc", out / kernel / f"{v}.tileir", out / kernel / f"{v}.json"
            with stage.each_variant(snakemake, "reference_ir", v, files[2], files[:2], kernel=kernel):
                d = reference_ir.run(p.op_dir, kernel, v, *files, w.op)
                print(kernel, v, d["verdict"], d["summary"])
