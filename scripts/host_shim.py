# Thin wrapper: rule host_shim -> tileport.host.write_shim
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import host, stage

w, i, o = snakemake.wildcards, snakemake.input, snakemake.output
with stage.guarded(snakemake, "host_shim"):
    d = host.write_shim(w.op, i.analysis, Path(o.verdict).parent.parent, o.ffi_rs, o.ffi_json, o.verdict,
                        attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
