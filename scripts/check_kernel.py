# Thin wrapper: checkpoint check_kernel -> tileport.flow.check.check (build + Tile IR + diff + diagnosis
# of one attempt), then tileport.flow.route.route (accept / retry / stop, read off that verdict)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import agents, job, stage
from tileport.flow import check, route

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, i, o, p = snakemake.wildcards, snakemake.input, snakemake.output, snakemake.params
llm = snakemake.config["llm"]
with stage.guarded(snakemake, "check_kernel"):
    diagnoser = agents.role_config(p.diagnoser, llm, Path(o.verdict).parents[4])
    d = check.check(p.op_dir, w.op, w.kernel, int(w.n), i.write, str(Path(i.ref) / w.kernel), list(p.variants),
                    o.verdict, target=p.target, diagnoser=diagnoser)
    print(d["verdict"], d["summary"])
# the route, also after a crash the guard turned into an ERROR verdict (env -> stop); it replaces
# the placeholder the guard left for it
cap = int(snakemake.config["attempts"]["write_kernel"])
r = route.route(o.verdict, o.route, p.backend, int(w.n), cap)
with open(snakemake.log[0], "a") as log:
    print(f"route: attempt {r['attempt']}/{cap}: {r['verdict']} -> {r['next']} ({r['route']}): {r['reason']}",
          file=log)
