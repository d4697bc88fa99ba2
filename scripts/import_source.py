# Thin wrapper: rule import_source -> tileport.cpu.importer.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage
from tileport.cpu import importer

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

with stage.guarded(snakemake, "import_source"):
    out = snakemake.output
    d = importer.run(snakemake.params.op_dir, out.kernel, out.source_map, out.verdict,
                     snakemake.wildcards.op, snakemake.params.pin)
    print(d["verdict"], d["summary"])
