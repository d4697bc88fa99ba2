# Thin wrapper: rule round_start -> the operator's analysis.json copied into GPU round r's results tree
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage

with stage.logged(snakemake.log[0]):
    Path(snakemake.output.analysis).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(snakemake.input.analysis, snakemake.output.analysis)
    print(f"round {snakemake.wildcards.r}: {snakemake.input.analysis} -> {snakemake.output.analysis}")
