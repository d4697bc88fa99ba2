# Thin wrapper: rule analyze -> tileport.analyze.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import analyze, stage

with stage.guarded(snakemake, "analyze"):
    d = analyze.run(snakemake.params.op_dir, snakemake.output[0], snakemake.wildcards.op)
    print(d["verdict"], d["summary"])
