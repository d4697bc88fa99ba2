# Thin wrapper: checkpoint gpu_route -> tileport.route.gpu_route (accept / retry / stop for one GPU round)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import route, stage

w, p = snakemake.wildcards, snakemake.params
with stage.logged(snakemake.log[0]):
    results = Path(snakemake.output.route).parents[3]
    d = route.gpu_route(results, w.op, int(w.r), list(p.kernels), snakemake.output.route,
                        writer=p.writer, writer_cap=int(p.cap))
    print(f"round {d['round']}: {d['next']} ({d['route']}): {d['reason']}")
