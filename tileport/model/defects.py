"""Known defects of the user's kernel, declared in the manifest (``known_defects``).

A cuTile Python kernel may itself compute something other than the PyTorch semantics its
``reference.py`` states: a bug of the kernel, not of the manifest and not of the port (TileGym
1.5.1's ``_fmha_variant_kernel_nsbd`` loads K with the KV tile on the head-dim axis; its
``_swa_fwd_kernel`` writes NaN in rows whose first KV block is fully masked when the scale is 1/8).
A faithful port then misses the PyTorch semantics exactly where the kernel does. The manifest
says so, per entry::

    known_defects:
      - kernel: _fmha_variant_kernel_nsbd     # a kernel of `kernels`
        line: 370                             # the line of its source that holds the defect:
                                              # kernel.py, or with `source:` the wheel module
        variants: all                         # all | [<variant id>, ...] |
                                              # {dtypes: [f16], constexprs: {TILE_D: 64}}
        effect: keys >= TILE_N score 0        # what the kernel computes instead (prose)
        evidence: CPU emulation ...           # how it is known (prose)

Their schema and the help of its errors are ``known_defects`` in ``schemas/manifest.schema.yaml``;
:func:`check` validates the entries when the manifest loads (:func:`tileport.model.manifest.load`): an
unknown kernel or variant, a selector that selects nothing, a line outside the kernel's source
file or outside every function of it is an error naming the manifest's file and line.

What it decides (:func:`tileport.gpu.test.verdict_of`, :func:`tileport.gpu.bench.fold`): a variant whose port
agrees with the reference (bit for bit, or within tolerance with NaN where it has NaN:
:func:`tileport.gpu.test.same_miss`) while both miss the PyTorch semantics, and that an entry covers, is
:data:`tileport.core.verdict.VARIANT_WORD` (owner ``kernel``), not FAIL; an operator whose variants are all
PASS or :data:`tileport.core.verdict.VARIANT_WORD`, at least one of them the latter, is
:data:`tileport.core.verdict.OP_WORD`: the port is faithful, the reference is defective. An entry whose defect
does not show (the reference matches the PyTorch semantics on every test call of a variant it covers) is a
stale declaration: a warning, owner ``manifest``. A port that differs from the reference on a covered variant
fails as any wrong port does (owner ``tool`` for the translator's port); an undeclared same miss stays the
manifest's.

The entry is not part of what a variant computes, but it decides verdicts, so its ``kernel``,
``line`` and ``variants`` are in the test-relevant hash (:mod:`tileport.gpu.kept`); ``effect`` and
``evidence`` are prose, like ``description``, and are not.
"""
from __future__ import annotations

import ast
import difflib
import json
from dataclasses import dataclass
from pathlib import Path

from tileport.core.source import IMPORT_DIR, MAP_SUFFIX, results_dir, source_lines
from tileport.core.wheels import checkout_pin, find_wheel

#: the prose fields, left out of the test-relevant hash (tileport.gpu.kept)
PROSE = ("effect", "evidence")



@dataclass(frozen=True)
class Defect:
    """One declared defect, resolved against the manifest: ``index`` in ``known_defects``,
    ``manifest`` / ``manifest_line`` (where it is declared), ``kernel``, ``file`` / ``line`` (the
    source line: ``operators/<op>/kernel.py`` or the wheel module's path, e.g.
    ``tilegym/ops/cutile/attention_variant.py``), ``variants`` (the ids it covers), ``effect``,
    ``evidence``."""

    index: int
    manifest: str
    manifest_line: int
    kernel: str
    file: str
    line: int
    variants: tuple
    effect: str
    evidence: str

    @property
    def label(self) -> str:
        """``known_defects[0] (operators/x/manifest.yaml:42)``"""
        return f"known_defects[{self.index}] ({self.manifest}:{self.manifest_line})"

    @property
    def where(self) -> str:
        """``<source file>:<line>``"""
        return f"{self.file}:{self.line}"

    def to_dict(self) -> dict:
        return {"entry": self.index, "declared": f"{self.manifest}:{self.manifest_line}", "kernel": self.kernel,
                "line": self.where, "effect": self.effect, "evidence": self.evidence}


def _same(a, b) -> bool:
    """Constexpr values equal as the manifest means them: true is not 1, and a float selector
    value (``TILE: 128.0``) is not an int constexpr's value (an int one, ``bias: 0``, may be a
    float constexpr's)."""
    if isinstance(b, float) and not isinstance(a, float):
        return False
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def selected(selector, variants: list) -> list:
    """The variants (:class:`tileport.model.manifest.Variant`) of one kernel ``selector`` covers:
    ``all``; a list of variant ids; ``{dtypes, constexprs}`` (each given key must match)."""
    if selector == "all":
        return list(variants)
    if isinstance(selector, list):
        return [v for v in variants if v.id in selector]
    dts, cx = selector.get("dtypes"), selector.get("constexprs") or {}
    return [v for v in variants if (dts is None or v.dtype in dts)
            and all(k in v.constexprs and _same(v.constexprs[k], x) for k, x in cx.items())]


def source_file(doc: dict, path: Path) -> tuple[str, str | None, set | None]:
    """``(name, text, mapped)`` of the file a defect's ``line`` counts in: ``kernel.py`` beside the
    manifest, or with ``source:`` the wheel module (its path in the site directory, read from the
    installed distribution without importing it, when it is the version the checkout's
    requirements-sources.txt pins). ``text`` is None when the file cannot be read here (a GPU
    node has no wheel, or another version); ``mapped`` is then the set of ``file:line`` the imported
    ``results/<op>/src/kernel.py`` holds (its line map), or None."""
    src = doc.get("source")
    if not src:
        f = path.parent / "kernel.py"
        try:
            return str(f), f.read_text(), None
        except OSError:
            return str(f), None, None
    rel = src["module"].replace(".", "/") + ".py"
    try:
        # the version the checkout pins (another one installed: its lines are not the ones meant)
        root = find_wheel(src["module"], checkout_pin(path)).root
        for cand in (rel, rel[:-3] + "/__init__.py"):
            if (root / cand).is_file():
                return cand, (root / cand).read_text(), None
    except Exception:  # noqa: BLE001 - not installed here (a GPU node): the line map below
        pass
    mp = results_dir(path.parent) / IMPORT_DIR / ("kernel.py" + MAP_SUFFIX)
    try:
        mapped = set(json.loads(mp.read_text()).get("lines", {}).values())
    except (OSError, ValueError, AttributeError):
        mapped = None
    return rel, None, mapped


def _functions(text: str) -> dict[str, tuple[int, int]]:
    """Every function of a module (nested ones too) -> (first line with its decorators, last line)."""
    out = {}
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([d.lineno for d in n.decorator_list] + [n.lineno])
            out.setdefault(n.name, (first, n.end_lineno or n.lineno))
    return out


def _reachable(text: str, kernel: str) -> set[str] | None:
    """The functions of the module ``kernel`` may call: itself and, transitively, every module
    function whose name its body mentions (a call, or a name passed on). None when the kernel is
    not a function of the module."""
    nodes = {}
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nodes.setdefault(n.name, n)
    if kernel not in nodes:
        return None
    seen, todo = set(), [kernel]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for m in ast.walk(nodes[f]):
            name = m.id if isinstance(m, ast.Name) else m.attr if isinstance(m, ast.Attribute) else None
            if name in nodes and name not in seen:
                todo.append(name)
    return seen


def check(doc: dict, kv: dict, at, path: Path) -> None:
    """Validate ``doc["known_defects"]`` (schema-checked already) against the kernels, their
    variants ``kv`` (kernel -> [Variant]) and the kernel's source (:func:`source_file`).

    Raises:
        tileport.model.manifest.ManifestError (through ``at``): an unknown kernel or variant id, a
            dtype or constexpr name the kernel's variants lack, a selector that selects no
            variant, a line past the end of the source file or outside every function of it
            (with ``source:``, where the wheel is not installed: a line the imported kernel.py
            does not hold).
    """
    entries = doc.get("known_defects") or []
    if not entries:
        return
    name, text, mapped = source_file(doc, path)
    funcs = None
    lines = source_lines(text) if text is not None else []
    if text is not None:
        try:
            funcs = _functions(text)
        except SyntaxError:
            funcs = None        # the analyser reports a kernel.py that does not parse
    seen: dict[str, int] = {}
    for i, e in enumerate(entries):
        base = ["known_defects", i]
        k = e["kernel"]
        key = json.dumps([k, e["line"], e["variants"]], sort_keys=True)
        if key in seen:
            raise at(base, f"repeats known_defects[{seen[key]}] (kernel {k}, line {e['line']}, the same variants); "
                           f"declare each defect once")
        seen[key] = i
        if k not in doc["kernels"]:
            near = difflib.get_close_matches(k, list(doc["kernels"]), n=1, cutoff=0.6)
            raise at(base + ["kernel"], f"'{k}' is not a kernel of this manifest"
                                        + (f" (did you mean {near[0]}?)" if near else "")
                                        + f"; the kernels are {', '.join(doc['kernels'])}")
        vs = kv[k]
        sel = e["variants"]
        if isinstance(sel, list):
            ids = [v.id for v in vs]
            for vid in sel:
                if vid not in ids:
                    near = difflib.get_close_matches(vid, ids, n=1, cutoff=0.6)
                    raise at(base + ["variants"], f"'{vid}' is not a variant of {k}"
                                                  + (f" (did you mean {near[0]}?)" if near else "")
                                                  + f"; its variants are {', '.join(ids)}")
        elif isinstance(sel, dict):
            dts = list(dict.fromkeys(v.dtype for v in vs))
            for dt in sel.get("dtypes") or []:
                if dt not in dts:
                    raise at(base + ["variants", "dtypes"], f"dtype '{dt}' is not a dtype of {k}'s variants "
                                                            f"({', '.join(dts)})")
            names = list(dict.fromkeys(n for v in vs for n in v.constexprs))
            for n in sel.get("constexprs") or {}:
                if n not in names:
                    near = difflib.get_close_matches(n, names, n=1, cutoff=0.6)
                    raise at(base + ["variants", "constexprs", n],
                             f"'{n}' is not a constexpr of {k}'s variants"
                             + (f" (did you mean {near[0]}?)" if near else "")
                             + f"; they set {', '.join(names) or 'none'}")
        if not selected(sel, vs):
            raise at(base + ["variants"], f"the selector {json.dumps(sel)} selects no variant of {k} (its variants: "
                                          f"{', '.join(v.id for v in vs)})")
        ln = e["line"]
        if text is not None:
            n_lines = len(lines)
            if ln > n_lines:
                raise at(base + ["line"], f"line {ln} is past the end of {name} ({n_lines} lines); give the "
                                          f"line of {k}'s source that holds the defect")
            if funcs is not None and not any(a <= ln <= b for a, b in funcs.values()):
                span = funcs.get(k)
                raise at(base + ["line"], f"line {ln} of {name} is outside every function of it"
                                          + (f" ({k} is lines {span[0]}-{span[1]})" if span else "")
                                          + "; give the line of the kernel (or of a helper it calls) that "
                                            "holds the defect")
            code = lines[ln - 1].strip()
            if not code or code.startswith("#"):
                raise at(base + ["line"], f"line {ln} of {name} is {'a comment' if code else 'blank'}; give the "
                                          f"line of {k}'s code that holds the defect")
            reach = _reachable(text, k)
            if reach is not None and not any(funcs[f][0] <= ln <= funcs[f][1] for f in reach):
                owner = next(f for f, (a, b) in sorted(funcs.items(), key=lambda x: x[1][1] - x[1][0])
                             if a <= ln <= b)
                raise at(base + ["line"], f"line {ln} of {name} is in {owner}, which {k} does not call (it calls "
                                          f"{', '.join(sorted(reach - {k})) or 'no function of the module'}); give "
                                          f"the line of {k} or of a helper it calls that holds the defect")
        elif mapped is not None and f"{name}:{ln}" not in mapped:
            raise at(base + ["line"], f"line {ln} of {name} is not among the lines the imported kernel.py "
                                      f"holds (the wheel is not installed here to read the module); give a "
                                      f"line of {k} or of a helper it calls")


def covering(defects: list[Defect]) -> dict[tuple[str, str], list[Defect]]:
    """``(kernel, variant id)`` -> the declared defects that cover it, in manifest order."""
    out: dict[tuple[str, str], list[Defect]] = {}
    for d in defects:
        for vid in d.variants:
            out.setdefault((d.kernel, vid), []).append(d)
    return out


def tested_part(entries) -> object:
    """``known_defects`` less its prose (:data:`PROSE`): what enters the test-relevant hash."""
    if not isinstance(entries, list):
        return entries
    return [{k: v for k, v in e.items() if k not in PROSE} if isinstance(e, dict) else e for e in entries]
