# Thin wrapper: rule round_start -> the operator's analysis.json copied into GPU round r's results tree
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

with stage.logged(snakemake.log[0]):
    Path(snakemake.output.analysis).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(snakemake.input.analysis, snakemake.output.analysis)
    print(f"round {snakemake.wildcards.r}: {snakemake.input.analysis} -> {snakemake.output.analysis}")
