"""tileport's own import graph, read from the source (never by importing): which modules a module
imports, the loops among them, and the import closure of a stage module -- the files a rule
declares as its code inputs, so that editing any module reruns exactly the stages that use it.

An import is an edge wherever it stands (module level or inside a function). ``from tileport.x
import y`` is an edge to ``tileport.x.y`` when that is a module, else to ``tileport.x``;
importing ``tileport.a.b`` also runs ``tileport/a/__init__.py``, so a package's face is in the
closure of every module under it. A module's closure also holds the data files it names as a path
under ``schemas/`` (``REPO / "schemas" / "manifest.schema.yaml"``): editing a schema reruns the
rules whose jobs read it.
"""
from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

PACKAGE = "tileport"
#: folders at the checkout's root whose files a module may read as part of its logic
DATA_DIRS = ("schemas",)


def _modules(pkg_dir: Path) -> dict[str, Path]:
    """``{dotted module name: file}`` of every ``.py`` file under ``pkg_dir`` (the package
    ``tileport``'s folder)."""
    out = {}
    for p in sorted(pkg_dir.rglob("*.py")):
        parts = list(p.relative_to(pkg_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names one import statement names (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


def _nodes(path: Path) -> list[ast.AST]:
    """Every node of the module at ``path``, parsed once per process and file version (the import
    graph and the data files walk the same trees: parsing each module twice was half of the
    Snakefile's start)."""
    st = path.stat()
    return _nodes_cached(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=None)
def _nodes_cached(path: str, mtime_ns: int, size: int) -> list[ast.AST]:
    return list(ast.walk(ast.parse(Path(path).read_text(), filename=path)))


def import_graph(pkg_dir: str | Path) -> dict[str, set[str]]:
    """``{module: {tileport modules it imports}}`` for the package in ``pkg_dir``.

    Raises:
        SyntaxError: a module does not parse (naming its file and line).
    """
    pkg_dir = Path(pkg_dir)
    mods = _modules(pkg_dir)
    graph: dict[str, set[str]] = {}
    for m, path in mods.items():
        edges = set()
        for node in _nodes(path):
            for name in _imported(node, m, path.name == "__init__.py"):
                while name and name not in mods:
                    name = name.rpartition(".")[0]
                if name and name != m and not m.startswith(name + "."):
                    edges.add(name)
        graph[m] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import loops of ``graph``: each strongly connected set of two or more modules, sorted
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def data_files(path: Path, root: Path) -> set[Path]:
    """The files under :data:`DATA_DIRS` of ``root`` that the module at ``path`` names as a path
    built with ``/`` from string constants (``... / "schemas" / "x.yaml"``) and that exist."""
    out = set()
    for node in _nodes(path):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
            continue
        parts, n = [], node
        while isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
            parts.insert(0, n.right)
            n = n.left
        words = [p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)]
        for i, w in enumerate(words[:-1]):
            if w in DATA_DIRS and (root / w / words[i + 1]).is_file():
                out.add(root / w / words[i + 1])
    return out


@lru_cache(maxsize=None)
def _graph_cached(pkg_dir: str) -> tuple[dict[str, set[str]], dict[str, Path], dict[str, set[Path]]]:
    mods = _modules(Path(pkg_dir))
    root = Path(pkg_dir).parent
    key = _graph_key(mods, root)
    kept = _read_kept(key, mods, root)
    if kept is not None:
        return kept[0], mods, kept[1]
    graph, data = import_graph(pkg_dir), {m: data_files(p, root) for m, p in mods.items()}
    _keep(key, graph, data, root)
    return graph, mods, data


# The import graph and data files of a package, kept on disk by the content of everything they
# are read from: every Snakemake command loads the Snakefile, whose rules' code parameters need
# them, and parsing the package's modules was about 0.9 s of each 3.5 s dry run of a small
# workflow (2 cores; a test run starts Snakemake some 90 times: issue 32).


#: graphs kept on disk at most (about 15 kB each)
KEPT_GRAPHS = 64


def _graph_key(mods: dict[str, Path], root: Path) -> str:
    """sha256 (hex) of what :func:`import_graph` and :func:`data_files` read: this module's own
    code, each module's name, path and bytes, and the names of the files under ``DATA_DIRS``."""
    h = hashlib.sha256(Path(__file__).read_bytes() + b"\0")
    for m, p in sorted(mods.items()):
        h.update(f"{m}\0{p.relative_to(root).as_posix()}\0".encode() + p.read_bytes() + b"\0")
    for d in DATA_DIRS:
        names = sorted(f.relative_to(root).as_posix() for f in (root / d).rglob("*") if f.is_file())
        h.update(("\0".join([d, *names]) + "\0\0").encode())
    return h.hexdigest()


def _read_kept(key: str, mods: dict[str, Path], root: Path):
    """``(graph, data files)`` kept under ``key`` (:func:`tileport.core.toolchain.read_kept`), or
    None (none kept, or not of these modules)."""
    from tileport.core.toolchain import read_kept

    kept = read_kept("closure", key)
    try:
        if kept is None or set(kept["graph"]) != set(mods) or set(kept["data"]) != set(mods):
            return None
        return ({m: set(e) for m, e in kept["graph"].items()},
                {m: {root / f for f in fs} for m, fs in kept["data"].items()})
    except (KeyError, TypeError):
        return None


def _keep(key: str, graph: dict[str, set[str]], data: dict[str, set[Path]], root: Path) -> None:
    """Keep ``graph`` and ``data`` under ``key`` (the :data:`KEPT_GRAPHS` latest stay)."""
    from tileport.core.toolchain import keep

    keep("closure", key, {"graph": {m: sorted(e) for m, e in graph.items()},
                          "data": {m: sorted(f.relative_to(root).as_posix() for f in fs) for m, fs in data.items()}},
         KEPT_GRAPHS)


def import_closure(module: str, pkg_dir: str | Path) -> list[Path]:
    """The files of ``module`` and of every tileport module it imports, directly or not, with
    the ``__init__.py`` of each package on the way and the data files each names
    (:func:`data_files`; sorted paths). Read once per process.

    Raises:
        KeyError: ``module`` is not a module of the package (its name, and the package folder).
    """
    graph, mods, data = _graph_cached(str(Path(pkg_dir).resolve()))
    if module not in mods:
        raise KeyError(f"{module} is not a module of {pkg_dir}")
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in mods)
        todo.extend(graph[m])
    return sorted({mods[m] for m in seen} | {f for m in seen for f in data[m]})


def script_modules(script: str | Path) -> list[str]:
    """The tileport modules a script (a rule's ``scripts/<stage>.py``) imports, wherever the
    import stands: ``from tileport.core import stage`` names ``tileport.core.stage`` when that is a
    module, else ``tileport.core``. Sorted, each once.

    Raises:
        OSError: the script cannot be read; SyntaxError: it does not parse.
    """
    path = Path(script)
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == PACKAGE:
            names.update(f"{node.module}.{a.name}" for a in node.names)
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] == PACKAGE)
    return sorted(names)


def code_inputs(script: str | Path, pkg_dir: str | Path, extra: tuple[str, ...] = ()) -> list[str]:
    """What a rule's code inputs are: the files of the import closure (:func:`import_closure`) of
    every tileport module ``script`` imports and of the modules ``extra`` names (one the script
    picks at run time by name), as sorted path strings. A dotted name that is no module of the
    package (``from tileport.core import atomic_write_text``) is skipped where a module above it is
    named too."""
    _, mods, _ = _graph_cached(str(Path(pkg_dir).resolve()))
    files = set()
    for m in [*script_modules(script), *extra]:
        if m in mods:
            files.update(import_closure(m, pkg_dir))
        elif m.rpartition(".")[0] not in mods:
            raise KeyError(f"{script}: imports {m}, which is no module of {pkg_dir}")
    return sorted(str(p) for p in files)


def code_sha(script: str | Path, pkg_dir: str | Path, extra: tuple[str, ...] = ()) -> str:
    """sha256 (hex) of the code a rule's job runs: each file of :func:`code_inputs` (path relative
    to the checkout, then content). The workflow passes it as a rule parameter instead of listing
    the files as inputs: a content change reruns the rule as before, while the scheduler no longer
    stats some 30 code files per job each time it selects jobs (issue 32: about a fifth of
    Snakemake's own CPU went to that on a 2,636-job run, measured with py-spy).

    Raises:
        OSError, SyntaxError, KeyError: as :func:`code_inputs`.
    """
    root = Path(pkg_dir).resolve().parent
    h = hashlib.sha256()
    for f in code_inputs(script, pkg_dir, extra):
        p = Path(f).resolve()
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
