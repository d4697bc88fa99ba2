# Thin wrapper: rule host_build -> tileport.host.shim.build
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.host import shim as host

o = snakemake.output
with stage.guarded(snakemake, "host_build"):
    d = host.build(snakemake.params.ops, Path(o.verdict).parent.parent, o.verdict,
                   attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
