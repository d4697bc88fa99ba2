"""Registers, shared memory and resident CTAs per SM of both sides of run-time cases: a
benchmark script that prints, never asserts. For each case folder of stage ``runtime_ir``
(``results/<op>/runtime/<kernel>/cases/<variant>/<shape>/``) it compiles the pair of one reading
for one architecture again with each side's tileiras flags (``tileport.cpu.sass.FLAGS``) and
prints ``cuobjdump -res-usage`` figures and the CTAs per SM they allow on sm_90
(``tileport.cpu.sass.ctas_per_sm``):

    python3 benchmarks/sass_occupancy.py results/tg_fused_linear_cross_entropy/runtime/_ce_online_kernel/cases/*/*
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.cpu import sass  # noqa: E402


def bytecode_of(tileir: Path) -> Path:
    """The ``ir/<key>.tileirbc`` a case's ``<reading>.<side>.tileir`` is a hard link of (same inode)."""
    ino = tileir.stat().st_ino
    ir = tileir.parents[3] / "ir"
    for f in ir.glob("*.tileir"):
        if f.stat().st_ino == ino:
            return f.with_suffix(".tileirbc")
    raise FileNotFoundError(f"{tileir}: no bytecode of the same inode in {ir}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+", type=Path)
    ap.add_argument("--reading", default="matched", choices=("launched", "matched"))
    ap.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    print("case | side | registers | shared B | local B | threads | CTAs/SM (sm_90 limits)")
    with tempfile.TemporaryDirectory() as tmp:
        for case in a.cases:
            for side in ("ref", "port"):
                bc = bytecode_of(case / f"{a.reading}.{side}.tileir")
                cub = sass.cubin(bc, Path(tmp) / f"{os.getpid()}-{side}.cubin", a.arch, side)
                r = sass.resources(cub)
                print(f"{case.parent.name}/{case.name} | {side} | {r['registers']} | {r['shared']} | {r['local']} | "
                      f"{r['threads']} | {sass.ctas_per_sm(r)}")


if __name__ == "__main__":
    main()
