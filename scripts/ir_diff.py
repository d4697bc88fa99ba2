# Thin wrapper: rule ir_diff -> tileport.ir_diff.run (BLOCKED when an IR is missing upstream)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import ir_diff
from tileport.core import stage
from tileport.core.verdict import Finding, Verdict, read, write

w, i = snakemake.wildcards, snakemake.input
with stage.guarded(snakemake, "ir_diff"):
    ups = {"reference_ir": read(i.ref_verdict), "rust_ir": read(i.port_verdict)}
    bad = {k: v for k, v in ups.items() if v["verdict"] != "PASS"}
    if bad:
        why = "; ".join(f"{k} {v['verdict']}: {v['summary']}" for k, v in bad.items())
        owner = next(iter(bad.values()))["owner"] or "kernel"
        d = write(Verdict(stage="ir_diff", op=w.op, kernel=w.kernel, variant=w.variant,
                          verdict="BLOCKED", owner=owner, summary=f"no IR to compare: {why}",
                          findings=[Finding("build", "critical", owner, why)]),
                  snakemake.output.verdict)
    else:
        d = ir_diff.run(i.ref, i.port, snakemake.output.verdict, w.op, w.kernel, w.variant,
                        attempt=snakemake.resources.attempt,
                        writer=(ups["rust_ir"].get("details") or {}).get("writer"),
                        target=snakemake.params.target)
    print(d["verdict"], d["summary"])
