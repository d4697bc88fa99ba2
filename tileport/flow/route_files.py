"""Routing records that must exist: the outputs of the checkpoints ``check_kernel``
(``route.json`` beside ``check.json``) and ``gpu_route``.

Snakemake does not rebuild an intermediate file that was deleted while everything made from it
is up to date (Snakemake 9: a job runs for a missing output only when a job that needs the file
runs, or when the file is a target), and for a checkpoint's output it does not even look
(the jobs after a checkpoint are judged only once its output exists). tileport, however, reads
the routes by path (``final_round``, the summary's ``gpu_route`` column): a deleted
``route.json`` silently became an empty column. This module finds, from the files on disk,
every route that a later file proves was made and that is missing now:

* ``results/<op>/final.json`` lists every GPU round taken (``rounds/<r>/route.json``) and the
  writer attempt each round tested per kernel (routes of attempts 1..n);
* a published kernel verdict (``results/<op>/write_kernel/<kernel>.json``, or the same in a
  round's tree) with ``attempt`` n needs the routes of attempts 1..n;
* writer attempt n >= 2 (``attempts/<kernel>/<n>/write.json``) was asked for by the route of
  attempt n-1; the tree of GPU round r >= 2 (``rounds/<r>/<op>/``) by round r-1's route.

``make run`` rebuilds what it finds as targets of a Snakemake run of their own
(:func:`rebuild_args`: only the routing rules may run where they are checkpoints, so nothing after
them reruns unless a rebuilt route differs); a bare ``snakemake`` of the summary stops naming
them and that command (rules/common.smk).

Command line: ``python -m tileport.flow.route_files [RESULTS]`` prints the missing routes, one per
line (nothing when none is missing); with ``--operators`` the final rounds of operators whose
results were deleted after the summary was written (:func:`deleted_operators`); with
``--rebuild-args CONFIG`` the Snakemake arguments of the rebuild for that config.yaml and the
rules beside it in ``rules/`` (:func:`rebuild_args`, one line); exit status 0.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def _json(path: Path):
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return None                      # absent, a placeholder, or damaged: no evidence
    return d if isinstance(d, dict) else None


def _int(v) -> int | None:
    return v if type(v) is int and v >= 1 else None


def missing_routes(results: str | Path = "results") -> list[tuple[str, str]]:
    """Routes (checkpoint outputs) that a later file under ``results`` proves were made and that
    are missing now.

    Args:
        results: the results folder (``results/<op>/...``).

    Returns:
        [(missing route path, the existing file that needs it)], paths as ``results/...``
        (joined onto ``results`` as given), sorted by route path.
    """
    results = Path(results)
    need: dict[Path, Path] = {}

    def want(route: Path, evidence: Path):
        need.setdefault(route, evidence)

    if not results.is_dir():
        return []
    for opdir in sorted(p for p in results.iterdir() if p.is_dir()):
        op = opdir.name
        attempts = opdir / "attempts"
        # final.json: every round taken, and the attempt each round tested per kernel
        final = _json(opdir / "final.json")
        for rnd in (final or {}).get("rounds") or []:
            if not isinstance(rnd, dict):
                continue
            if _int(rnd.get("round")):
                want(opdir / "rounds" / str(rnd["round"]) / "route.json", opdir / "final.json")
            for kernel, m in (rnd.get("attempts") or {}).items():
                for n in range(1, (_int(m) or 0) + 1):
                    want(attempts / str(kernel) / str(n) / "route.json", opdir / "final.json")
        # published kernels (round 1 and each later round's tree)
        trees = [opdir] + sorted((opdir / "rounds").glob(f"*/{op}"))
        for tree in trees:
            for v in sorted((tree / "write_kernel").glob("*.json")):
                d = _json(v)
                m = _int((d or {}).get("attempt"))
                for n in range(1, (m or 0) + 1):
                    want(attempts / v.stem / str(n) / "route.json", v)
        # attempt n >= 2 follows the route of n-1; round r >= 2 follows round r-1's route
        for w in sorted(attempts.glob("*/*/write.json")):
            n = w.parent.name
            if n.isdigit() and int(n) >= 2:
                want(w.parent.parent / str(int(n) - 1) / "route.json", w)
        for tree in sorted((opdir / "rounds").glob(f"*/{op}")):
            r = tree.parent.name
            if r.isdigit() and int(r) >= 2 and any(tree.iterdir()):
                want(opdir / "rounds" / str(int(r) - 1) / "route.json", tree)
    return sorted((str(r), str(e)) for r, e in need.items() if not r.exists())


def deleted_operators(results: str | Path = "results", operators: str | Path | None = None) -> list[str]:
    """Operators whose results were deleted after a summary was written: ``results/summary.csv``
    has their analysis at PASS (an operator whose analysis or name blocks never has a final
    round) but ``results/<op>/final.json`` is gone, and ``operators/<op>/`` (``operators``,
    default beside ``results``) is still there. Snakemake 9 does not rebuild them for the
    summary: every way to them passes a checkpoint whose output is gone too, and it then reports
    nothing to be done (snakemake/snakemake#3879); as targets of their own they are built.
    Returns the operator names, sorted."""
    import csv
    import re

    results = Path(results)
    operators = Path(operators) if operators is not None else results.parent / "operators"
    try:
        with open(results / "summary.csv", newline="", encoding="utf-8", errors="replace") as fh:
            ops = {row.get("op") for row in csv.DictReader(fh)
                   if (row.get("analyze") or "").split()[:1] in (["PASS"], ["PASS_WITH_NOTES"])}
    except (OSError, ValueError, csv.Error):
        return []
    out = []
    for op in sorted(o for o in ops if isinstance(o, str) and re.fullmatch(r"[a-z][a-z0-9_]*", o)):
        try:                # an operator name as the workflow's wildcard constraint has it
            if (operators / op).is_dir() and not (results / op / "final.json").exists():
                out.append(op)
        except OSError:
            continue
    return out


#: the rules that publish or follow a route: a rebuild of routes never runs them (their outputs
#: stand as they are; a later run reruns them only where a rebuilt route came out different)
ROUTE_FOLLOWERS = ("accept_kernel", "round_kernel", "round_start", "final_round")


def rule_names(rules_dir: str | Path) -> list[str]:
    """The names of the rules and checkpoints defined in ``rules_dir/*.smk`` (at any indent: a
    rule may be defined inside an if / else), sorted."""
    pat = re.compile(r"^[ \t]*(?:rule|checkpoint) (\w+):", re.M)
    return sorted({m[1] for f in Path(rules_dir).glob("*.smk") for m in pat.finditer(f.read_text())})


def rebuild_args(may: dict[str, bool], rules: list[str]) -> list[str]:
    """The Snakemake arguments beside the missing routes that rebuild them alone.

    Where ``may`` (:func:`tileport.flow.route.may_retry`) makes ``check_kernel`` or
    ``gpu_route`` a checkpoint: ``--allowed-rules
    check_kernel gpu_route`` (Snakemake 9 then plans the whole DAG and runs only those).
    Otherwise every rule of ``rules`` but :data:`ROUTE_FOLLOWERS`: without a checkpoint
    Snakemake 9 plans from the allowed rules alone (``Workflow.execute``), so the routing rules
    alone could not rebuild a route deleted with its inputs (MissingInputException), and no
    restriction would rerun the followers of a rebuilt route in the same run (through the shared
    host library, other operators' too).
    """
    if may["cpu"] or may["gpu"]:
        return ["--allowed-rules", "check_kernel", "gpu_route"]
    return ["--allowed-rules", *sorted(r for r in rules if r not in ROUTE_FOLLOWERS)]


def main(argv=None) -> int:
    """``[--operators] [RESULTS]``: the missing routes, or with ``--operators`` the final
    rounds (``results/<op>/final.json``) of the deleted operators, one per line; with
    ``--rebuild-args CONFIG`` the rebuild's Snakemake arguments (exit 2, the file and the cause on
    stderr, for a config.yaml that does not read or lacks a role or cap the rebuild reads)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tileport.flow.route_files")
    ap.add_argument("results", nargs="?", default="results")
    ap.add_argument("--operators", action="store_true", help="the deleted operators' final rounds")
    ap.add_argument("--rebuild-args", metavar="CONFIG", help="the rebuild's Snakemake arguments for this config.yaml")
    a = ap.parse_args(sys.argv[1:] if argv is None else list(argv))
    if a.rebuild_args:
        from tileport.core import yamlio
        from tileport.flow.route import may_retry_under

        cfg = Path(a.rebuild_args)
        why = yamlio.check_file(cfg)
        if why is None:
            try:
                may = may_retry_under(yamlio.load_file(cfg))
            except (KeyError, TypeError) as exc:
                what = f"the key {exc} is missing" if isinstance(exc, KeyError) else "roles or attempts is no mapping"
                why = (f"{cfg}: roles.kernel_writer, roles.host_builder, attempts.write_kernel and "
                       f"attempts.host_shim decide the rebuild, and {what} (schemas/config.schema.yaml)")
        if why is not None:
            print(f"tileport: {why}", file=sys.stderr)
            return 2
        print(" ".join(rebuild_args(may, rule_names(cfg.parent / "rules"))))
    elif a.operators:
        for op in deleted_operators(a.results):
            print(str(Path(a.results) / op / "final.json"))
    else:
        for route, _ in missing_routes(a.results):
            print(route)
    return 0


if __name__ == "__main__":
    sys.exit(main())
