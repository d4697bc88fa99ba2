# Thin wrapper: rule analyze -> tileport.analyze.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import analyze, stage

stage.apply_tools(snakemake.params.tools)
with stage.logged(snakemake.log[0], snakemake.resources.attempt):
    d = analyze.run(Path(snakemake.input[0]).parent, snakemake.output[0], snakemake.wildcards.op)
    print(d["verdict"], d["summary"])
