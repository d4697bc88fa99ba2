# Thin wrapper: rule host_build -> tileport.host.build
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import host, stage

o = snakemake.output
with stage.guarded(snakemake, "host_build"):
    d = host.build(snakemake.params.ops, Path(o.verdict).parent.parent, o.verdict,
                   attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
