# Thin wrapper: rules accept_kernel / round_kernel -> tileport.flow.route.accept (publish the attempt the
# routes led to, its per-variant Tile IR, IR diff and diagnosis included, into results/<op>/ or a GPU
# round's results tree)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage
from tileport.flow import route

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, o = snakemake.wildcards, snakemake.output
with stage.guarded(snakemake, "write_kernel"):
    # attempts live under the workflow's results/, whichever tree the kernel is published to
    results = Path(snakemake.input.write).parents[4]
    dirs = {s: o[s] for s in route.VARIANT_STAGES}
    d = route.accept(results, w.op, w.kernel, snakemake.input.route, o.rust, o.source_map, o.verdict,
                     out_dirs=dirs, variants=list(snakemake.params.variants))
    print(f"attempt {d['attempt']}: {d['verdict']} {d['summary']}")
    for r in d["details"].get("routes", []):
        print(f"  attempt {r['attempt']}: {r['next']} ({r['route']}): {r['reason']}")
