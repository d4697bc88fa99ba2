# Thin wrapper: rule mutation -> tileport.cpu.mutation.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.cpu import mutation

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
with stage.guarded(snakemake, "mutation"):
    # the operator's reference Tile IR and runtime_ir verdicts: a folder per kernel / <kernel>.json
    ref, runtime = Path(i.ref) / w.kernel, Path(i.runtime) / f"{w.kernel}.json"
    d = mutation.run(p.op_dir, w.op, w.kernel, i.build, str(ref), str(runtime), p.variants, snakemake.output.verdict,
                     snakemake.output.work, settings=p.settings, target=p.target)
    print(d["verdict"], d["summary"])
    print("cost:", (d.get("details") or {}).get("cost"))
