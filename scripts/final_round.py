# Thin wrapper: rule final_round -> tileport.flow.route.final (the operator's last GPU round)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage
from tileport.flow import route

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

with stage.logged(snakemake.log[0]):
    results = Path(snakemake.output.final).parents[1]
    d = route.final(results, snakemake.wildcards.op, snakemake.output.final)
    for x in d["rounds"]:
        print(f"round {x['round']}: {x['next']} ({x['route']}): {x['reason']}")
