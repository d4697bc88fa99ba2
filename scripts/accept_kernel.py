# Thin wrapper: rule accept_kernel -> tileport.route.accept (publish the attempt the routes led to)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import route, stage

w, o = snakemake.wildcards, snakemake.output
with stage.guarded(snakemake, "write_kernel"):
    results = Path(o.verdict).parent.parent.parent
    d = route.accept(results, w.op, w.kernel, snakemake.input.route, o.rust, o.source_map, o.verdict)
    print(f"attempt {d['attempt']}: {d['verdict']} {d['summary']}")
    for r in d["details"].get("routes", []):
        print(f"  attempt {r['attempt']}: {r['next']} ({r['route']}): {r['reason']}")
