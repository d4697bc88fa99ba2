"""Where an operator's cuTile Python kernels are, and where their lines came from.

An operator's kernels are either its own ``operators/<op>/kernel.py`` or, when its manifest has a
``source:`` key (``source: {module: tilegym.ops.cutile.softmax, kernels: [...]}``), the file the
importer (rule ``import_source``, :mod:`tileport.cpu.importer`) wrote from an installed wheel:
``results/<op>/src/kernel.py``, with its line map ``kernel.py.map.json`` and its verdict
``import.json`` beside it. Every stage finds the file through :func:`kernel_py`; ``reference.py``
and ``manifest.yaml`` always stay in ``operators/<op>/``.

Verdicts name the lines of that file; :func:`annotate` (called by :func:`tileport.core.verdict.write`)
adds the wheel module's line to every location and ``file:line`` text that points into an
imported ``kernel.py``: a location dict gets ``origin`` (``tilegym/ops/cutile/softmax.py:45``),
a text ``.../src/kernel.py:27`` becomes ``.../src/kernel.py:27 [tilegym/ops/cutile/softmax.py:45]``.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path

import yaml

IMPORT_DIR = "src"              # results/<op>/src/
MAP_SUFFIX = ".map.json"        # results/<op>/src/kernel.py.map.json
VERDICT_NAME = "import.json"    # results/<op>/src/import.json

#: yaml.safe_load's loader, with libyaml's parser where PyYAML has it (every Snakefile start
#: reads each manifest here: the pure-Python parser took most of a second for 48 of them)
_SAFE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SourceBlocked(ValueError):
    """The operator's kernels come from a wheel and the import did not PASS (or has not run).

    ``owner`` is the import verdict's owner (``tool`` when tileport cannot follow TileGym's code,
    ``kernel`` when the manifest names something the module does not have)."""

    def __init__(self, message: str, owner: str = "kernel"):
        super().__init__(message)
        self.owner = owner


def source_of(op_dir: str | Path) -> dict | None:
    """The manifest's ``source:`` mapping (``{"module": str, "kernels": [str, ...]?}``), or None
    for an operator with its own ``kernel.py`` (also when the manifest cannot be read: the
    manifest loader reports that)."""
    p = Path(op_dir) / "manifest.yaml"
    try:
        st = p.stat()
    except OSError:
        return None
    src = _manifest_doc(str(p), st.st_mtime_ns, st.st_size).get("source")
    return dict(src) if isinstance(src, dict) and isinstance(src.get("module"), str) else None


def manifest_key(op_dir: str | Path, key: str):
    """The top-level ``key`` of ``op_dir``'s manifest.yaml as parsed (a copy), or None (also when
    the manifest cannot be read: the manifest loader reports that). Parsed once per manifest
    version, as for :func:`source_of`."""
    p = Path(op_dir) / "manifest.yaml"
    try:
        st = p.stat()
    except OSError:
        return None
    return copy.deepcopy(_manifest_doc(str(p), st.st_mtime_ns, st.st_size).get(key))


@lru_cache(maxsize=256)
def _manifest_doc(path: str, mtime_ns: int, size: int) -> dict:
    # read once per manifest version (every rule's input function asks, for every job)
    try:
        doc = yaml.load(Path(path).read_text(), Loader=_SAFE)  # libyaml: see _SAFE
    except (OSError, yaml.YAMLError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def results_dir(op_dir: str | Path) -> Path:
    """``results/<op>/`` of the checkout that holds ``operators/<op>/`` (round 1's tree, where the
    imported source lives for every GPU round)."""
    op_dir = Path(op_dir).resolve()
    return op_dir.parent.parent / "results" / op_dir.name


def imported_kernel_py(op_dir: str | Path) -> Path:
    """``results/<op>/src/kernel.py``: where the importer writes an operator's kernels."""
    return results_dir(op_dir) / IMPORT_DIR / "kernel.py"


def kernel_py(op_dir: str | Path) -> Path:
    """The cuTile Python file every stage reads for an operator: ``results/<op>/src/kernel.py``
    when its manifest has ``source:``, else ``operators/<op>/kernel.py``.

    ``op_dir`` is ``operators/<op>``; the file need not exist yet (the importer writes it)."""
    return imported_kernel_py(op_dir) if source_of(op_dir) is not None else Path(op_dir) / "kernel.py"


def check_imported(op_dir: str | Path) -> None:
    """Raise :class:`SourceBlocked` when the operator's kernels come from a wheel and its import
    verdict (``results/<op>/src/import.json``) is missing or not PASS; the message quotes it."""
    if source_of(op_dir) is None:
        return
    vpath = imported_kernel_py(op_dir).parent / VERDICT_NAME
    try:
        doc = json.loads(vpath.read_text())
    except (OSError, ValueError):
        raise SourceBlocked(f"{vpath}: no readable import verdict (rule import_source writes it)",
                            "tool") from None
    if doc.get("verdict") not in ("PASS", "PASS_WITH_NOTES"):
        raise SourceBlocked(f"{vpath}: import {doc.get('verdict')}: {doc.get('summary', '')}",
                            doc.get("owner") or "tool")


def source_name(op_dir: str | Path, kernel: str) -> str:
    """summary.csv's ``source`` of one kernel: ``module:function`` for an imported kernel
    (``tilegym.ops.cutile.softmax:_softmax_kernel``), ``operators/<op>/kernel.py:function``
    otherwise."""
    src = source_of(op_dir)
    if src is not None:
        return f"{src['module']}:{kernel}"
    return f"operators/{Path(op_dir).name}/kernel.py:{kernel}"


@lru_cache(maxsize=64)
def _line_map(map_path: str, mtime_ns: int) -> dict[int, str]:
    try:
        doc = json.loads(Path(map_path).read_text())
        return {int(k): str(v) for k, v in doc.get("lines", {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def origin(file: str | Path, line: int | None) -> str | None:
    """``module file:line`` inside the wheel that line ``line`` of an imported ``kernel.py``
    was copied from (None for an own kernel.py, a generated line or an unknown file)."""
    if line is None or not str(file).endswith(f"{IMPORT_DIR}/kernel.py"):
        return None
    mp = Path(str(file) + MAP_SUFFIX)
    try:
        mtime = mp.stat().st_mtime_ns
    except OSError:
        return None
    return _line_map(str(mp), mtime).get(int(line))


# the whole line number, not yet annotated (no backtracking to a prefix of an annotated number)
_TEXT = re.compile(r"(?P<file>[^\s'\"()\[\]]*" + IMPORT_DIR + r"/kernel\.py):(?P<line>\d+)(?!\d| \[)")


def annotate_text(text: str) -> str:
    """``.../src/kernel.py:27`` -> ``.../src/kernel.py:27 [tilegym/ops/cutile/x.py:45]``."""
    def sub(m):
        o = origin(m.group("file"), int(m.group("line")))
        return f"{m.group(0)} [{o}]" if o else m.group(0)
    return _TEXT.sub(sub, text)


def _annotate_loc(where: dict) -> None:
    o = origin(where.get("file", ""), where.get("line"))
    if o is None and isinstance(where.get("source"), str) and ":" in where["source"]:
        f, _, ln = where["source"].rpartition(":")
        o = origin(f, int(ln)) if ln.isdigit() else None
    if o is not None:
        where["origin"] = o


def _walk(obj):
    if isinstance(obj, dict):
        if isinstance(obj.get("file"), str) or isinstance(obj.get("source"), str):
            _annotate_loc(obj)
        for k, v in obj.items():
            if isinstance(v, str):
                obj[k] = annotate_text(v)
            else:
                _walk(v)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, str):
                obj[i] = annotate_text(v)
            else:
                _walk(v)


def annotate(doc: dict) -> dict:
    """Add the wheel module's line next to every line of an imported ``kernel.py`` a verdict
    names (in place; see the module doc). A verdict that names no imported file is unchanged."""
    if f"{IMPORT_DIR}/kernel.py" in json.dumps(doc):
        _walk(doc)
    return doc


@lru_cache(maxsize=None)
def content_sha(paths: tuple[str, ...]) -> str:
    """sha256 (hex) of files' contents, each after its path (a missing file counts as empty).
    The workflow passes it as a rule parameter over the operator's own files the rule reads, so a
    content change reruns the rule even when the file came in with an older mtime (rsync -a,
    cp -p, tar, unzip keep the sender's); Snakemake reruns a job whose parameters changed.
    Read once per process (one Snakemake run sees one state of the files)."""
    h = hashlib.sha256()
    for p in paths:
        path = Path(p)
        h.update(p.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
    return h.hexdigest()


#: the line ends Python's tokenizer, ast and cuTile's locations count (the Language Reference,
#: "Physical lines"): not the form feeds and other separators str.splitlines also splits at
_EOL = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """The lines of Python source as its tokenizer, :mod:`ast` and cuTile's locations number them:
    split at ``\\n``, ``\\r\\n`` and ``\\r`` only (``str.splitlines`` also splits at form feeds,
    ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028`` ...)."""
    lines = _EOL.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines
