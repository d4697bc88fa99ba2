"""Copy the newest kept H200 test / bench verdicts that still hold (tileport.gpu.kept.Kept) into
results/<op>/, then write .gpu/pending.tsv: op, pending configs (or "all" where no kept bench
verdict holds), configs in the manifest, the pending configs as KERNEL/VARIANT/SHAPE,...
Usage (repository root, after the CPU stages of the operators): PYTHONPATH=. python prep.py OP..."""

import shutil
import sys
from pathlib import Path

from tileport.core.verdict import read
from tileport.gpu.kept import Kept

# newest first
DIRS = ["docs/results/h200-2026-12-07b/ops", "docs/results/h200-2026-12-07/ops",
        "docs/results/h200-2026-12-06/ops", "docs/results/h200/ops"]


def shape_text(shape) -> str:
    return shape if isinstance(shape, str) else "x".join(map(str, shape))


def main(ops: list[str]) -> None:
    rows = []
    for op in ops:
        kept, res = Kept("results", op, f"operators/{op}"), Path("results") / op
        got = {}
        for name, extra in (("test.json", None), ("bench.json", "bench.csv")):
            for d in DIRS:
                src = Path(d) / op / name
                if not src.exists():
                    continue
                standing = kept.standing(read(src))
                if standing != "holds":
                    print(f"{op} {name} {d}: {standing}")
                    continue
                shutil.copy(src, res / name)
                if extra and (src.parent / extra).exists():
                    shutil.copy(src.parent / extra, res / extra)
                got[name] = d
                break
        pend = kept.pending()
        print(f"{op}: test={got.get('test.json')} bench={got.get('bench.json')} "
              f"pending={'all' if pend is None else len(pend)} of {len(kept.perf)}")
        cfgs = [f"{p['kernel']}/{p['variant']}/{shape_text(p['shape'])}" for p in pend or []]
        rows.append((op, "all" if pend is None else len(pend), len(kept.perf), ",".join(cfgs)))
    Path(".gpu").mkdir(exist_ok=True)
    Path(".gpu/pending.tsv").write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))


if __name__ == "__main__":
    main(sys.argv[1:])
