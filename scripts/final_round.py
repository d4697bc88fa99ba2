# Thin wrapper: rule final_round -> tileport.flow.route.final (the operator's last GPU round)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.flow import route

with stage.logged(snakemake.log[0]):
    results = Path(snakemake.output.final).parents[1]
    d = route.final(results, snakemake.wildcards.op, snakemake.output.final)
    for x in d["rounds"]:
        print(f"round {x['round']}: {x['next']} ({x['route']}): {x['reason']}")
