"""Write a tasks file for run.sh: op, mode, configs, cap seconds. Usage (repository root, after
prep.py): PYTHONPATH=. python tasks.py OUT N_PER_OP CAP OP...  Mode `configs` takes N pending
configs spread over the operator's kernels and dtypes (bench --configs); mode `pending` is for an
operator with no kept bench verdict that holds (bench --pending-only, in manifest order, its first
N configs compiled ahead)."""

import sys
from itertools import zip_longest

from tileport.gpu.kept import Kept


def main(out: str, n: int, cap: str, ops: list[str]) -> None:
    pend = {line.split("\t")[0]: line.rstrip("\n").split("\t") for line in open(".gpu/pending.tsv")}
    with open(out, "w") as f:
        for op in ops:
            _, mode, _total, cfgs = pend[op]
            if mode == "all":
                keys = ["/".join(k) for k in Kept("results", op, f"operators/{op}").perf]
                f.write(f"{op}\tpending\t{','.join(keys[:n])}\t{cap}\n")
                continue
            groups: dict[tuple[str, str], list[str]] = {}
            for c in filter(None, cfgs.split(",")):
                kernel, variant, _shape = c.split("/")
                groups.setdefault((kernel, variant.split("-")[0]), []).append(c)
            spread = [c for row in zip_longest(*groups.values()) for c in row if c][:n]
            if spread:
                f.write(f"{op}\tconfigs\t{','.join(spread)}\t{cap}\n")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:])
