# Thin wrapper: checkpoint gpu_route -> tileport.flow.gpu_round.gpu_route (accept / retry / stop for one GPU round)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import agents, job, stage
from tileport.flow import gpu_round

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, p = snakemake.wildcards, snakemake.params
with stage.logged(snakemake.log[0]):
    results = Path(snakemake.output.route).parents[3]
    d = gpu_round.gpu_route(results, w.op, int(w.r), list(p.kernels), snakemake.output.route,
                        writer=p.writer, writer_cap=int(p.cap), host_builder=p.host_builder,
                        host_cap=int(p.host_cap), op_dir=p.op_dir,
                        diagnoser=agents.role_config(p.diagnoser, snakemake.config["llm"], results))
    print(f"round {d['round']}: {d['next']} ({d['route']}): {d['reason']}")
