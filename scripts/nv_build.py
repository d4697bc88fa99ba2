# Thin wrapper: rule nv_build -> tileport.nvidia.port.build (NVIDIA's crate from the installed wheel, one pin set)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.nvidia import port as nv_port

w, o = snakemake.wildcards, snakemake.output
with stage.guarded(snakemake, "nv_build"):
    d = nv_port.build(w.pins, Path(o.verdict).parent, o.verdict, attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
