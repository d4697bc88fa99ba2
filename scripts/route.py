# Thin wrapper: checkpoint route -> tileport.flow.route.route (accept / retry / stop for one attempt)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.flow import route

w, p = snakemake.wildcards, snakemake.params
with stage.logged(snakemake.log[0]):
    d = route.route(snakemake.input.check, snakemake.output.route, p.backend, int(w.n), int(p.cap))
    print(f"attempt {d['attempt']}/{p.cap}: {d['verdict']} -> {d['next']} ({d['route']}): {d['reason']}")
