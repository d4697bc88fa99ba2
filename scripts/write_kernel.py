# Thin wrapper: rule write_kernel -> tileport.write_kernel.run (backend: translator)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import stage, write_kernel

w, out = snakemake.wildcards, snakemake.output
attempt, cap = snakemake.resources.attempt, snakemake.params.cap
with stage.guarded(snakemake, "write_kernel"):
    d = write_kernel.run(snakemake.params.op_dir, w.kernel, out.rust, out.verdict, w.op,
                         attempt=attempt)
    print(f"attempt {attempt}/{cap}:", d["verdict"], d["summary"])
    if not Path(out.source_map).exists():
        Path(out.source_map).write_text('{"lines": []}\n')
    if d["verdict"] != "PASS" and attempt < cap and snakemake.params.backend != "translator":
        # a failed attempt of a non-deterministic writer: Snakemake retries it (each attempt
        # keeps its log); the deterministic translator would only repeat itself
        raise SystemExit(f"write_kernel attempt {attempt} of {cap}: {d['summary']}")
