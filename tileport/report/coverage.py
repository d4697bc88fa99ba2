"""The coverage table: every ``@ct.kernel`` of an installed package (all of TileGym:
``ops/cutile``, ``suites/*``, ``transformers``) and how far tileport got with it, from
``results/summary.csv``, per subtree and per kernel.

One row per kernel of the package (found by :func:`inventory` in the installed wheel's text,
never imported), matched to summary.csv rows by their ``source`` column
(``module:function``): the operator(s) that import it, how many variants reach reference_ir
PASS and ir_diff PASS, the stage where its least advanced variant stopped with that verdict, and
the cause (the row's ``note``: the first failing stage's summary, which names ``file:line`` of
the imported kernel.py and, in brackets, the wheel module's line). A kernel no operator imports
is listed as such.

    python -m tileport.report.coverage results/summary.csv                    # print the table
    python -m tileport.report.coverage results/summary.csv --readme README.md --out docs/coverage.md

The README's subtree table lies between ``<!-- coverage:begin -->`` and ``<!-- coverage:end -->``;
the per-kernel table is written by ``--out`` (``make run``: results/coverage.md).
"""
from __future__ import annotations

import argparse
import ast
import csv
import sys
from pathlib import Path

from tileport.core import source, wheels
from tileport.cpu import importer
from tileport.report.summary import NO_TEST_SHAPE, bench_failure, from_checkout

PACKAGE = "tilegym"
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"
# summary.csv's stage columns in pipeline order (the import's verdict heads each row's note)
CPU_STAGES = ("analyze", "reference_ir", "write_kernel", "rust_build", "rust_ir", "ir_diff")
PASSING = ("PASS", "PASS_WITH_NOTES")
# the summary.csv columns the table reads (``bench`` and ``note`` are optional: older summaries)
REQUIRED = ("op", "kernel", "variant", "source", *CPU_STAGES, "test", "ratio")


def inventory(package: str = PACKAGE) -> list[dict]:
    """Every ``@ct.kernel`` function of ``package`` and its subpackages in the installed
    distribution: ``[{"module", "function", "file", "line"}]`` (file inside the site directory,
    1-based line of the ``def``; ``factory``: the enclosing function of a kernel defined inside
    one, and ``reason``: why the importer cannot take it, :func:`importer.factory_reason`), in
    file and line order.

    Raises:
        wheels.ImportFailed: no installed distribution provides the package.
    """
    wheel = wheels.find_wheel(package)
    loader = importer.Loader(wheel, check_record=False)
    base = wheel.root / package.replace(".", "/")
    out = []
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(wheel.root).as_posix()
        name = rel[:-3].replace("/", ".")
        name = name[: -len(".__init__")] if name.endswith(".__init__") else name
        mod = loader.module(name)
        if mod is None:
            continue
        ex = importer.Extraction(loader, name, [])
        found = [{"module": name, "function": st.name, "file": rel, "line": st.lineno}
                 for st in mod.tree.body
                 if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and ex.is_kernel(st, mod)]
        found += [{"module": name, "function": k, "file": rel, "line": line, "factory": outer,
                   "reason": importer.factory_reason(mod, k)[1]}
                  for k, (outer, line) in importer.nested_kernels(mod).items()]
        out += sorted(found, key=lambda k: k["line"])
    return out


def _stop(row: dict) -> tuple[int, str, str]:
    """(rank, stage, verdict) where one summary row stopped; a higher rank got further."""
    if row.get("note", "").startswith("import_source:"):
        return 0, "import_source", row["analyze"] if row["analyze"] not in PASSING else "?"
    for i, st in enumerate(CPU_STAGES, 1):
        if row.get(st) not in PASSING:
            return i, st, row.get(st, "missing")
    test = row.get("test", "")
    # REF_DEFECT: the port is faithful (tileport.model.defects); a variant no test shape fits is checked
    # by the bench at its perf shapes, so the bench's column says how far it got
    if test not in ("PASS", "REF_DEFECT", NO_TEST_SHAPE):
        return len(CPU_STAGES) + 1, "gpu_test", test.split(" (", 1)[0] or "missing"
    ratio = row.get("ratio", "")
    try:
        float(ratio)
    except ValueError:
        return len(CPU_STAGES) + 2, "bench", ratio.split(" (", 1)[0] or "missing"
    # timed, but a timed output may have missed: the bench column (summary.csv written before it
    # existed: none) says whether the benchmark passed for this variant
    failed = bench_failure(row.get("bench"))
    if failed:
        return len(CPU_STAGES) + 2, "bench", failed
    return len(CPU_STAGES) + 3, "bench", row.get("bench") or "DONE"


def subtree(module: str, package: str = PACKAGE) -> str:
    """The part of the wheel a kernel's module lies in, relative to ``package``: two levels under
    ``ops`` and ``suites`` (``ops/cutile``, ``suites/liger``), one elsewhere (``transformers``)."""
    parts = module[len(package) + 1:].split(".") if module.startswith(package + ".") else module.split(".")
    return "/".join(parts[:2] if parts[0] in ("ops", "suites") and len(parts) > 2 else parts[:1])


def kernel_rows(summary_csv: str | Path, kernels: list[dict], operators_dir: str | Path | None = None,
                package: str = PACKAGE) -> list[dict]:
    """One record per kernel of ``kernels`` (:func:`inventory`) with how far summary.csv says it
    got: ``name`` (module relative to ``package``, wheel line), ``subtree`` (:func:`subtree`),
    ``ops``, ``variants``, ``ref`` / ``ir`` (variants at reference_ir / ir_diff PASS),
    ``tested`` / ``timed`` (every variant past gpu_test / benchmarked), ``stage``, ``verdict``,
    ``cause``. ``operators_dir`` (default: ``operators/`` beside ``results/``) attributes a one-row
    operator (kernel ``-``: a malformed manifest) to the kernels its manifest's ``source:`` names.

    Raises:
        OSError: ``summary_csv`` cannot be read.
        ValueError: its header lacks a column of :data:`REQUIRED` (``<file>:1: ...``), so that no
            table of zeros is written over a README's."""
    summary_csv = Path(summary_csv)
    with open(summary_csv, newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{summary_csv}:1: not a tileport summary.csv: its header lacks column(s) "
                         f"{', '.join(missing)}")
    ops_dir = Path(operators_dir) if operators_dir else summary_csv.resolve().parent.parent / "operators"
    by_kernel: dict[str, list[dict]] = {}
    for r in rows:
        src = r.get("source", "")
        if r.get("kernel") == "-":
            named = (source.source_of(ops_dir / r["op"]) or {}).get("kernels") or []
            for k in named:
                by_kernel.setdefault(f"{src}:{k}", []).append(r)
        elif src:
            by_kernel.setdefault(src, []).append(r)
    out = []
    for k in kernels:
        short = k["module"][len(package) + 1:] if k["module"].startswith(package + ".") else k["module"]
        rec = {"name": f"`{short}:{k['function']}` ({k['line']})", "subtree": subtree(k["module"], package),
               "ops": "", "variants": 0, "ref": 0, "ir": 0, "tested": False, "timed": False}
        rs = by_kernel.get(f"{k['module']}:{k['function']}", [])
        if not rs:
            why = (k["reason"].replace("|", "\\|") if k.get("factory") else
                   "no operator's manifest names it in `source:`")
            out.append({**rec, "stage": "no operator", "verdict": "-", "cause": why})
            continue
        var = [r for r in rs if r.get("variant") != "-"]
        worst = min(rs, key=lambda r: _stop(r)[0])
        rank, stage, verdict = _stop(worst)
        # paths from the checkout's root, so the table reads the same in every clone (a summary
        # written before summary.csv did so itself names this machine's or a GPU node's)
        cause = from_checkout(worst.get("note") or "").replace("|", "\\|").replace("\n", " ")[:240]
        out.append({**rec, "ops": ", ".join(sorted({r["op"] for r in rs})), "variants": len(var),
                    "ref": sum(r["reference_ir"] in PASSING for r in var),
                    "ir": sum(r["ir_diff"] in PASSING for r in var),
                    "tested": bool(var) and rank > len(CPU_STAGES) + 1,
                    "timed": bool(var) and rank == len(CPU_STAGES) + 3,
                    "stage": stage, "verdict": verdict, "cause": cause})
    return out


def subtree_table(records: list[dict]) -> str:
    """Markdown: per subtree of the wheel, its ``@ct.kernel`` count from the census, how many an
    operator imports, how many reach reference_ir / ir_diff PASS on every variant, pass the GPU
    test and are benchmarked (:func:`kernel_rows` records)."""
    lines = ["| subtree | `@ct.kernel`s | imported | reference_ir PASS | ir_diff PASS | GPU-tested | benchmarked |",
             "|---|---|---|---|---|---|---|"]
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(r["subtree"], []).append(r)
    for name, rs in [*sorted(groups.items()), ("all", records)]:
        full = [r for r in rs if r["variants"]]
        cells = [len(rs), sum(bool(r["ops"]) for r in rs), sum(r["ref"] == r["variants"] for r in full),
                 sum(r["ir"] == r["variants"] for r in full), sum(r["tested"] for r in rs), sum(r["timed"] for r in rs)]
        label = f"**{name}**" if name == "all" else f"`{name}`"
        lines.append(f"| {label} | " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def table(summary_csv: str | Path, kernels: list[dict], operators_dir: str | Path | None = None,
          package: str = PACKAGE, records: list[dict] | None = None) -> str:
    """The markdown coverage of ``kernels`` (:func:`inventory`) from ``summary_csv``: the subtree
    table (:func:`subtree_table`), then one row per kernel. ``records``: :func:`kernel_rows`
    already read (else read here). Raises as :func:`kernel_rows`."""
    records = records if records is not None else kernel_rows(summary_csv, kernels, operators_dir, package)
    lines = ["| kernel (wheel line) | operator | variants | reference_ir PASS | ir_diff PASS | "
             "stopped at | verdict | cause |",
             "|---|---|---|---|---|---|---|---|"]
    for r in records:
        if not r["ops"]:
            lines.append(f"| {r['name']} | - | 0 | - | - | no operator | - | {r['cause']} |")
        else:
            lines.append(f"| {r['name']} | {r['ops']} | {r['variants']} | {r['ref']}/{r['variants']} | "
                         f"{r['ir']}/{r['variants']} | {r['stage']} | {r['verdict']} | {r['cause']} |")
    return subtree_table(records) + "\n" + _total(records, package, Path(summary_csv).name) + "\n\n" + \
        "\n".join(lines) + "\n"


def _total(records: list[dict], package: str, csv_name: str) -> str:
    full = [r for r in records if r["variants"]]
    return (f"{len(records)} `@ct.kernel` functions in `{package}`; {sum(bool(r['ops']) for r in records)} "
            f"imported by an operator; reference_ir PASS on every variant: "
            f"{sum(r['ref'] == r['variants'] for r in full)}; ir_diff PASS on every variant: "
            f"{sum(r['ir'] == r['variants'] for r in full)}. Generated from `{csv_name}` by "
            f"`python -m tileport.report.coverage`.")


def readme_block(summary_csv: str | Path, kernels: list[dict], operators_dir: str | Path | None = None,
                 package: str = PACKAGE, full_table: str = "docs/coverage.md",
                 records: list[dict] | None = None) -> str:
    """What the README shows between the coverage markers: the subtree table and the totals,
    pointing to ``full_table`` for the per-kernel rows. ``records`` as for :func:`table`.
    Raises as :func:`kernel_rows`."""
    records = records if records is not None else kernel_rows(summary_csv, kernels, operators_dir, package)
    return (subtree_table(records) + "\n" + _total(records, package, Path(summary_csv).name)
            + f" Every kernel, with where it stopped and why: [{full_table}]({full_table}).\n")


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the coverage markers replaced by ``block``.

    Raises:
        ValueError: the markers are missing or out of order."""
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        raise ValueError(f"no '{BEGIN}' ... '{END}' block")
    return text[: a + len(BEGIN)] + "\n" + block + text[b:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tileport.report.coverage", description=__doc__.split("\n\n")[0])
    ap.add_argument("summary", help="results/summary.csv")
    ap.add_argument("--package", default=PACKAGE, help=f"package whose kernels are listed ({PACKAGE})")
    ap.add_argument("--readme", help="rewrite the subtree table between the coverage markers of this file")
    ap.add_argument("--out", help="also write the whole table (subtrees, then every kernel) to this file")
    ap.add_argument("--full-table", default="docs/coverage.md",
                    help="where the README's block says the whole table is (docs/coverage.md)")
    a = ap.parse_args(argv)
    try:
        kernels = inventory(a.package)
        records = kernel_rows(a.summary, kernels, package=a.package)      # summary.csv read once
        text = table(a.summary, kernels, package=a.package, records=records)
        block = readme_block(a.summary, kernels, package=a.package, full_table=a.full_table,
                             records=records) if a.readme else ""
    except (OSError, ValueError, wheels.ImportFailed) as exc:
        print(f"tileport.report.coverage: {exc}", file=sys.stderr)
        return 1
    if a.out:
        Path(a.out).write_text("# Coverage of TileGym's kernels\n\n" + text)
    if a.readme:
        p = Path(a.readme)
        try:
            p.write_text(replace_block(p.read_text(), block))
        except (OSError, ValueError) as exc:
            print(f"tileport.report.coverage: {p}: {exc}", file=sys.stderr)
            return 1
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
