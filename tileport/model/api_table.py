"""The public API of the installed cuda.tile, name by name, against the translator's coverage.

:func:`public_names` enumerates what a kernel writer can spell with the installed ``cuda.tile``
(1.7.0 here): every name of ``cuda.tile.__all__`` (``ct.load``), every public attribute of
``ct.Tile`` and ``ct.Array`` (``Tile.astype``, ``Array.shape``), every operator ``ct.Tile``
defines (``Tile.__add__``; a reflected ``__radd__`` is the same row), and every keyword argument
of a function of ``__all__`` that takes a compile-time value (``ct.load(latency=)``,
``ct.kernel(occupancy=)``). Facts come from the installed module itself (``inspect``), so a
release that adds a name adds a row that ``docs/cuda-tile-api.yaml`` must fill.

``docs/cuda-tile-api.yaml`` holds one row per name: its status and evidence
(:data:`STATUSES`); :func:`render_markdown` writes ``docs/cuda-tile-api.md`` from it
(``python -m tileport.model.api_table`` rewrites the page). ``tests/test_api_table.py``
checks both against the installed module and the construct kernels.
"""
from __future__ import annotations

import inspect
import sys
from pathlib import Path

from tileport.core import yamlio

REPO = Path(__file__).resolve().parent.parent.parent
TABLE = REPO / "docs" / "cuda-tile-api.yaml"
PAGE = REPO / "docs" / "cuda-tile-api.md"

# PASS: a translator rule and a construct kernel at IR PASS, with a mutant the IR diff catches;
# BLOCKED: cutile 0.5.0 cannot express it (a source line proves it);
# NOT_YET: no translator rule yet (the analyser blocks it, owner tool);
# HOST: not device code (host launch, decorators, exceptions, type annotations): no Tile IR.
STATUSES = ("PASS", "BLOCKED", "NOT_YET", "HOST")
REQUIRED = {"PASS": {"rule", "kernel", "mutant"}, "BLOCKED": {"evidence", "why"},
            "NOT_YET": {"why"}, "HOST": {"why"}}
OPTIONAL = {"note", "rule"}


# dunder attributes of Tile / Array that are no operator a kernel can spell
NOT_OPERATORS = {"__dict__", "__weakref__", "__module__", "__init__", "__doc__", "__repr__",
                 "__str__", "__hash__", "__annotations__", "__qualname__", "__slots__",
                 "__firstlineno__", "__static_attributes__", "__new__", "__init_subclass__"}


def _keywords(obj) -> list[str]:
    """Parameters of ``obj`` a caller may pass by keyword with a default (compile-time values:
    axes, hints, modes ...); ``[]`` where ``inspect`` reads no signature (a DType)."""
    try:
        sig = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is not p.empty
            and p.name != "self"]


def public_names(ct=None) -> list[str]:
    """Every public name of the installed ``cuda.tile`` (module ``ct``, imported when None), in
    the row spelling of ``docs/cuda-tile-api.yaml``: ``ct.<name>``, ``Tile.<attr>``,
    ``Array.<attr>``, ``Tile.__<op>__`` and ``ct.<function>(<keyword>=)``. Sorted, no
    duplicates. Source: the module's ``__all__`` and ``inspect`` of its objects."""
    if ct is None:
        import cuda.tile as ct
    names = set()
    for n in ct.__all__:
        names.add(f"ct.{n}")
        obj = getattr(ct, n)
        if n == "kernel" or (callable(obj) and not inspect.isclass(obj)):
            names.update(f"ct.{n}({k}=)" for k in _keywords(obj))
    for cls in ("Tile", "Array"):
        c = getattr(ct, cls)
        own = {a for k in c.__mro__ if k is not object for a in vars(k)}
        names.update(f"{cls}.{a}" for a in own if not a.startswith("_"))
        for a in own:
            if a.startswith("__") and a.endswith("__") and a not in NOT_OPERATORS:
                forward = "__" + a[3:] if a.startswith("__r") and ("__" + a[3:]) in own else a
                names.add(f"{cls}.{forward}")
    return sorted(names)


def load_table(path: Path = TABLE) -> dict:
    """``{name: row}`` from ``docs/cuda-tile-api.yaml``. Raises ``ValueError`` naming the file
    and the row for a status outside :data:`STATUSES` or a missing / unknown field."""
    rows = yamlio.load_file(path)
    for name, row in rows.items():
        st = row.get("status")
        if st not in STATUSES:
            raise ValueError(f"{path}: {name}: status {st!r} is not one of {list(STATUSES)}")
        missing = REQUIRED[st] - set(row)
        unknown = set(row) - REQUIRED[st] - OPTIONAL - {"status"}
        if missing or unknown:
            raise ValueError(f"{path}: {name}: status {st} needs {sorted(REQUIRED[st])}"
                             + (f"; missing {sorted(missing)}" if missing else "")
                             + (f"; unknown {sorted(unknown)}" if unknown else ""))
    return rows


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(rows: dict) -> str:
    """The page ``docs/cuda-tile-api.md``: a count per status, then one table row per name
    (status, translator rule, kernel and mutant or evidence)."""
    counts = {s: sum(1 for r in rows.values() if r["status"] == s) for s in STATUSES}
    out = ["# cuda.tile 1.7.0, name by name",
           "",
           "Every public name of the installed `cuda.tile` (its `__all__`, the attributes and "
           "operators of `Tile` and `Array`, the keyword arguments that take compile-time values), "
           "with what the translator does with it. Generated from `docs/cuda-tile-api.yaml` by "
           "`python -m tileport.model.api_table`; `tests/test_api_table.py` fails when the "
           "installed module has a name without a row, or a row's evidence does not hold.",
           "",
           "- **PASS**: a translator rule (`tileport/translate/`), and a kernel of the test "
           "operator `tests/data/operators/constructs` that uses the name, reaches IR PASS "
           "(`tests/test_constructs.py`) and has a mutant the IR diff catches "
           "(`tests/test_mutations.py`, named here).",
           "- **BLOCKED**: cutile 0.5.0 cannot express it; the source line proves it.",
           "- **NOT_YET**: no translator rule yet: the analyser stops the kernel, owner `tool`.",
           "- **HOST**: not device code (host launch, decorators, exceptions, annotations).",
           "",
           "Counts: " + ", ".join(f"{s} {counts[s]}" for s in STATUSES) + f" ({len(rows)} names).",
           "",
           "| name | status | rule | kernel / evidence | mutant / why |",
           "|---|---|---|---|---|"]
    for name in sorted(rows):
        r = rows[name]
        if r["status"] == "PASS":
            mid, last = f"`{r['kernel']}`", r["mutant"]
        elif r["status"] == "BLOCKED":
            ev = r["evidence"]
            mid, last = f"`{ev['file']}:{ev['line']}`: `{ev['text']}`", r["why"]
        else:
            mid, last = "", r["why"]
        rule = f"`{r['rule']}`" if r.get("rule") else ""
        if r.get("note"):
            last = f"{last} ({r['note']})"
        out.append(f"| `{_cell(name)}` | {r['status']} | {_cell(rule)} | {_cell(mid)} | {_cell(last)} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":     # python -m tileport.model.api_table: rewrite the page
    PAGE.write_text(render_markdown(load_table()))
    sys.stdout.write(f"wrote {PAGE}\n")
