# Thin wrapper: rule nv_ir_diff -> tileport.nvidia.port.diff (tileport's IR diff on NVIDIA's port)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.nvidia import port as nv_port

w, i, o = snakemake.wildcards, snakemake.input, snakemake.output
with stage.guarded(snakemake, "nv_ir_diff"):
    d = nv_port.diff(w.op, w.kernel, w.variant, i.ref, i.ref_verdict, i.nv, i.nv_verdict, o.verdict,
                     attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
