# Thin wrapper: rule import_source -> tileport.cpu.importer.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.cpu import importer

with stage.guarded(snakemake, "import_source"):
    out = snakemake.output
    d = importer.run(snakemake.params.op_dir, out.kernel, out.source_map, out.verdict,
                     snakemake.wildcards.op, snakemake.params.pin)
    print(d["verdict"], d["summary"])
