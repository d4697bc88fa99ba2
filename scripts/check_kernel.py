# Thin wrapper: rule check_kernel -> tileport.flow.check.check (build + Tile IR + diff + diagnosis of one attempt)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import agents, stage
from tileport.flow import check

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
llm = snakemake.config["llm"]
with stage.guarded(snakemake, "check_kernel"):
    diagnoser = agents.role_config(p.diagnoser, llm, Path(snakemake.output.verdict).parents[4])
    d = check.check(p.op_dir, w.op, w.kernel, int(w.n), i.write, str(Path(i.ref) / w.kernel), list(p.variants),
                    snakemake.output.verdict, target=p.target, diagnoser=diagnoser)
    print(d["verdict"], d["summary"])
