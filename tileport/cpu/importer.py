"""Stage ``import_source``: an operator's cuTile Python kernels, read as text from an installed wheel.

A manifest with ``source: {module: tilegym.ops.cutile.softmax, kernels: [_softmax_kernel]}``
names a module of an installed distribution (``tilegym``, pinned with its hash in
``requirements-sources.txt`` and installed with ``pip install --no-deps``). The module is never
imported (TileGym's modules import torch at their top; the CPU environment has no torch): its
text is parsed with :mod:`ast` and :mod:`symtable`, and ``results/<op>/src/kernel.py`` gets

* the named ``@ct.kernel`` functions, with their decorator arguments (``occupancy=``, ...);
* every module-level name they use, transitively: ``@ct.function`` helpers and plain helper
  functions (cuTile inlines them), constants, ``ConstInt = ct.Constant[int]``,
  ``zero_pad = ct.PaddingMode.ZERO``, imports of ``cuda.tile`` and of the standard library
  (``from cuda.tile import RoundingMode as RMd``, ``import math``), and definitions from other
  modules of the same distribution (``from .utils import next_power_of_2``), copied from there;
* nothing else: torch wrappers, autograd classes, autotuning, backend registration.

Each kept statement is copied verbatim, so its lines keep their text (but for the uses of torch
that cuTile compiles like its own spelling, :mod:`tileport.model.torch_uses`: a ``torch.Tensor``
parameter annotation is dropped, ``torch.int32`` in a body only cuTile runs becomes ``ct.int32``;
each is listed in the header and is an ``info`` finding); the file's header names
the distribution, its version, the wheel's sha256 (the hash ``pip --require-hashes`` checked)
and, for every kept statement, this file's line range and the module line range it came from.
``kernel.py.map.json`` maps every line to ``module file:line`` (:func:`tileport.core.source.origin`).

Decorators that are not cuTile's are handled by name, never silently: a decorator in
:data:`DROPPABLE_DECORATORS` is left out with a finding that says why that cannot change the
kernel (TileGym's ``@experimental_kernel`` only tags the kernel object for a warning that its
patched ``ct.launch`` prints); any other is BLOCKED.

BLOCKED (owner ``tool``): a kernel defined inside a function (a kernel factory,
:func:`factory_reason`), a used name that needs torch (beyond those rewrites) or a third-party
module, a name bound only
inside a module-level ``if``/``try``, a module object imported from the distribution, an unknown
decorator, two different definitions of one name. BLOCKED (owner ``kernel``): the manifest names
a function the module lacks or one that is not a ``@ct.kernel``, a used name the module never
defines. ERROR (owner ``env``): the distribution is not installed, its version is not the pinned
one, or an installed file differs from the hash in the distribution's RECORD.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import json
import os
import symtable
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tileport.core import source, toolchain
from tileport.core.verdict import Finding, Verdict, atomic_write_text, loc, write
from tileport.core.wheels import ImportFailed, Wheel, find_wheel
from tileport.model import manifest
from tileport.model import torch_uses as TU

CUTILE = "cuda.tile"
# third-party modules whose imports kernel.py may keep besides cuda.tile and the standard library:
# pinned in requirements.lock (so present on the CPU side and on a GPU node), no torch inside
IMPORTABLE = {"numpy"}
CUTILE_DECORATORS = {"cuda.tile.kernel", "cuda.tile.function"}
# decorators that are not cuTile's but provably leave the decorated kernel unchanged:
# qualified name -> why it can be left out (read from the distribution's source)
# (short reason for kernel.py's header, full reason for the verdict)
DROPPABLE_DECORATORS = {
    "tilegym.experimental.experimental_kernel": (
        "tags the kernel object with a warning for TileGym's ct.launch; returns the same kernel",
        "tilegym/experimental.py: it sets the kernel object's _tracked_message and returns the same "
        "object; TileGym's patched ct.launch prints that message once. The compiled kernel is "
        "unchanged, and tileport launches with cuTile's own ct.launch"),
}


class ImportBlocked(Exception):
    """A kept definition needs something tileport cannot copy (see the module doc)."""

    def __init__(self, message: str, file: str, line: int | None, owner: str = "tool", name: str = ""):
        super().__init__(message)
        self.file, self.line, self.owner, self.name = file, line, owner, name


# ---------------------------------------------------------------------------------- modules
@dataclass
class Module:
    """One parsed module of the distribution."""

    name: str                     # dotted, e.g. tilegym.ops.cutile.softmax
    rel: str                      # path inside the site directory
    path: Path
    text: str
    lines: list[str]
    tree: ast.Module
    is_package: bool
    bindings: dict[str, list[int]] = field(default_factory=dict)   # name -> top-level stmt indices
    nested: dict[str, int] = field(default_factory=dict)           # name -> line (inside if/try/...)
    star: list[int] = field(default_factory=list)                  # lines of `from X import *`


def _bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in stmt.names if a.name != "*"]
    targets = (stmt.targets if isinstance(stmt, ast.Assign) else
               [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else [])
    out = []
    for t in targets:
        out += [n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    return out


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=256)
def _parsed(path: str, mtime_ns: int, size: int) -> tuple[bytes, ast.Module | SyntaxError]:
    """A module file's bytes and syntax tree, once per file version and process (the rule's
    input function imports every operator's kernels when Snakemake builds the DAG)."""
    data = Path(path).read_bytes()
    try:
        return data, ast.parse(data.decode(), filename=path)
    except SyntaxError as exc:
        return data, exc


class Loader:
    """Reads and caches the distribution's modules; records every file it read."""

    def __init__(self, wheel: Wheel, check_record: bool = True):
        self.wheel, self.check_record = wheel, check_record
        self.modules: dict[str, Module] = {}
        self.files: dict[str, str] = {}          # rel -> sha256 hex of the bytes read

    def module(self, name: str) -> Module | None:
        """The module ``name`` of the distribution (None when it has no such file).

        Raises:
            ImportFailed: the file differs from the distribution's RECORD, or has a syntax error.
        """
        if name in self.modules:
            return self.modules[name]
        base = name.replace(".", "/")
        for rel, pkg in ((f"{base}.py", False), (f"{base}/__init__.py", True)):
            path = self.wheel.root / rel
            if path.is_file():
                break
        else:
            return None
        data, tree = _parsed(str(path), *_stamp(path))
        if self.check_record and self.wheel.modified(rel, data):
            raise ImportFailed(self.wheel.modified_message(path))
        self.files[rel] = hashlib.sha256(data).hexdigest()
        text = data.decode()
        if isinstance(tree, SyntaxError):
            raise ImportFailed(f"{path}:{tree.lineno}: syntax error: {tree.msg}")
        mod = Module(name, rel, path, text, source.source_lines(text), tree, pkg)
        for i, stmt in enumerate(tree.body):
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                mod.star.append(stmt.lineno)
            names = _bound_names(stmt)
            if names:
                for n in names:
                    mod.bindings.setdefault(n, []).append(i)
            elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for node in ast.walk(stmt):
                    if isinstance(node, ast.stmt) and node is not stmt:
                        for n in _bound_names(node):
                            mod.nested.setdefault(n, node.lineno)
        self.modules[name] = mod
        return mod


# ---------------------------------------------------------------------------------- extraction
@dataclass
class Kept:
    """One top-level statement copied into kernel.py (``lines``: its module lines, 1-based,
    without the decorator lines left out)."""

    module: Module
    index: int
    stmt: ast.stmt
    names: list[str]
    lines: list[int]
    kind: str                             # kernel | function | class | assign | import
    text: str | None = None               # generated text (imports, aliases) instead of lines
    dropped: list[dict] = field(default_factory=list)
    via: str = ""                         # the chain of kept definitions that led here
    # uses of torch replaced in this statement's lines (tileport.model.torch_uses)
    rewrites: list[TU.Rewrite] = field(default_factory=list)
    # for a plain function: where Python may run it (None while only cuTile runs its body:
    # it is reached from kernel / helper bodies only); always None for @ct.kernel / @ct.function
    python: str | None = None
    plain: bool = False                   # a function without a cuTile decorator
    # free names -> (line of first use, where Python evaluates it or None for the body)
    free: dict[str, tuple[int, str | None]] = field(default_factory=dict)

    def line_text(self, ln: int) -> str:
        """Module line ``ln`` as kernel.py holds it (its rewrites applied)."""
        return TU.apply(self.module.lines[ln - 1], [r for r in self.rewrites if r.line == ln])

    @property
    def start(self) -> int:
        return min(self.lines)

    @property
    def end(self) -> int:
        return max(self.lines)


def _stmt_start(stmt: ast.stmt) -> int:
    decos = getattr(stmt, "decorator_list", [])
    return min([d.lineno for d in decos] + [stmt.lineno])


def _qualname(expr: ast.expr, mod: Module) -> str | None:
    """Dotted name an expression such as ``ct.kernel`` / ``experimental_kernel`` refers to,
    through the module's imports (``import cuda.tile as ct`` -> ``cuda.tile.kernel``)."""
    if isinstance(expr, ast.Call):
        expr = expr.func
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    head = expr.id
    for i in mod.bindings.get(head, []):
        st = mod.tree.body[i]
        if isinstance(st, ast.Import):
            for a in st.names:
                if (a.asname or a.name.split(".")[0]) == head:
                    base = a.name if a.asname else head
                    return ".".join([base] + parts[::-1])
        if isinstance(st, ast.ImportFrom):
            src = _from_module(st, mod)
            for a in st.names:
                if (a.asname or a.name) == head:
                    return ".".join([f"{src}.{a.name}"] + parts[::-1])
    return ".".join([f"{mod.name}.{head}"] + parts[::-1])


def _from_module(st: ast.ImportFrom, mod: Module) -> str:
    """Absolute module of ``from X import ...`` inside ``mod`` (relative levels resolved)."""
    if not st.level:
        return st.module or ""
    pkg = mod.name.split(".")
    if not mod.is_package:
        pkg = pkg[:-1]
    pkg = pkg[:len(pkg) - (st.level - 1)]
    return ".".join(pkg + ([st.module] if st.module else []))


def _free_names(src: str, rel: str) -> set[str]:
    """Names a top-level statement reads from the module scope (decorators, defaults,
    annotations, and the globals its body refers to, nested scopes included), by symtable."""
    table = symtable.symtable(src, rel, "exec")
    out = {s.get_name() for s in table.get_symbols()
           if s.is_referenced() and not (s.is_assigned() or s.is_imported())}

    def walk(t):
        for child in t.get_children():
            for s in child.get_symbols():
                if s.is_global() and s.is_referenced():
                    out.add(s.get_name())
            walk(child)
    walk(table)
    return out


def _torch_names(mod: Module) -> set[str]:
    """Top-level names of ``mod`` bound only by ``import torch`` / ``import torch as t``."""
    out = set()
    for name, idx in mod.bindings.items():
        if all(isinstance(st := mod.tree.body[i], ast.Import)
               and any(a.name == "torch" and (a.asname or "torch") == name for a in st.names)
               for i in idx):
            out.add(name)
    return out


def _cutile_spelling(mod: Module, prefer: set[str]) -> str | None:
    """How ``mod`` spells ``cuda.tile`` at top level (``ct`` for ``import cuda.tile as ct``,
    ``cuda.tile`` for ``import cuda.tile``); one of ``prefer`` (the names a statement already
    reads) first; None when no top-level import binds it."""
    found = []
    for st in mod.tree.body:
        if isinstance(st, ast.Import):
            found += [a.asname or CUTILE for a in st.names if a.name == CUTILE]
        elif isinstance(st, ast.ImportFrom) and not st.level and st.module == "cuda":
            found += [a.asname or "tile" for a in st.names if a.name == "tile"]
    return next((f for f in found if f.split(".")[0] in prefer), found[0] if found else None)


def _name_line(stmt: ast.stmt, name: str) -> int:
    """First line of ``stmt`` that reads ``name`` (the statement's line when none does)."""
    lines = [n.lineno for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name]
    return min(lines, default=stmt.lineno)


_BUILTINS = set(dir(builtins))


class Extraction:
    """The closure of the named kernels over module-level names (see the module doc)."""

    def __init__(self, loader: Loader, module: str, kernels: list[str]):
        self.loader, self.module_name, self.kernels = loader, module, list(kernels)
        self.kept: dict[tuple[str, int], Kept] = {}
        self.aliases: list[tuple[str, str, Module, int]] = []   # (alias, name, module, line)
        self.problems: list[ImportBlocked] = []
        self.dropped: list[dict] = []
        self.module_order: list[str] = []
        self.main: Module | None = None

    # -- entry
    def run(self) -> None:
        main = self.loader.module(self.module_name)
        if main is None:
            raise ImportBlocked(f"the installed {self.loader.wheel.name} {self.loader.wheel.version} "
                                f"has no module '{self.module_name}'", self.module_name, None,
                                "kernel", self.module_name)
        self.main = main
        self.module_order.append(main.name)
        defs = {s.name: s for s in main.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        kernels = sorted(n for n, s in defs.items() if self.is_kernel(s, main))
        nested = nested_kernels(main)
        for k in self.kernels:
            stmt = defs.get(k)
            if stmt is None and k in nested:
                line, why = factory_reason(main, k)
                self.problems.append(ImportBlocked(f"{main.rel}:{line}: {why}", main.rel, line, "tool", k))
            elif stmt is None:
                self.problems.append(ImportBlocked(
                    f"{main.rel}: no function '{k}' (its @ct.kernel functions: {kernels})",
                    main.rel, None, "kernel", k))
            elif not self.is_kernel(stmt, main):
                self.problems.append(ImportBlocked(
                    f"{main.rel}:{stmt.lineno}: '{k}' is not a @ct.kernel function (its @ct.kernel "
                    f"functions: {kernels})", main.rel, stmt.lineno, "kernel", k))
            else:
                self.resolve(main, k, main.rel, stmt.lineno, k)
        self.check_rewrites()

    def is_kernel(self, stmt, mod: Module) -> bool:
        """Whether a def of ``mod`` carries cuTile's ``@kernel`` (under any alias of cuda.tile)."""
        return any(_qualname(d, mod) == f"{CUTILE}.kernel" for d in stmt.decorator_list)

    # -- resolution
    def resolve(self, mod: Module, name: str, used_in: str, line: int, via: str,
                py: str | None = None) -> None:
        """Keep the statements that bind ``name`` in ``mod`` (and what they use), or record why
        not; ``used_in:line`` is where ``name`` is used, ``via`` the chain of kept definitions
        that leads there (``kernel -> helper``), both for the message; ``py`` says where Python
        evaluates that use (None: inside a body only cuTile runs)."""
        where = f"{used_in}:{line}: '{name}' (used by {via})"
        if name in mod.bindings:
            for i in mod.bindings[name]:
                self.keep(mod, i, name, used_in, line, via, py)
        elif name in mod.nested:
            self.problems.append(ImportBlocked(
                f"{where} is bound only inside a module-level if/try/with/loop at "
                f"{mod.rel}:{mod.nested[name]}; tileport copies top-level definitions only",
                used_in, line, "tool", name))
        elif name not in _BUILTINS and mod.star:
            self.problems.append(ImportBlocked(
                f"{where} is not bound in {mod.rel} itself and may come from its `import *` at "
                f"line {mod.star[0]}; tileport does not follow star imports", used_in, line, "tool", name))
        elif name not in _BUILTINS:
            self.problems.append(ImportBlocked(
                f"{where} is not defined in {mod.rel} (a NameError when the kernel is compiled)",
                used_in, line, "kernel", name))

    def keep(self, mod: Module, i: int, name: str, used_in: str, line: int, via: str,
             py: str | None = None) -> None:
        key = (mod.rel, i)
        stmt = mod.tree.body[i]
        if key in self.kept and not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            k = self.kept[key]
            if py is not None and k.plain and k.python is None:
                k.python = py                     # Python may run it: so its body's names too
                self.resolve_free(k)
            return
        if mod.name not in self.module_order:
            self.module_order.append(mod.name)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self.keep_import(mod, i, stmt, name, used_in, line, via, py)
            return
        lines = list(range(_stmt_start(stmt), stmt.end_lineno + 1))
        kind = ("class" if isinstance(stmt, ast.ClassDef) else
                "function" if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else "assign")
        k = Kept(mod, i, stmt, _bound_names(stmt), lines, kind)
        self.kept[key] = k
        cutile_only = False
        for d in getattr(stmt, "decorator_list", []):
            q = _qualname(d, mod)
            if q in CUTILE_DECORATORS:
                if q == f"{CUTILE}.kernel":
                    k.kind = "kernel"
                # a kernel's body, or a tile function's unless host=True, only cuTile runs
                # (cuda/tile/_execution.py: kernel objects cannot be called, function() wraps)
                cutile_only = cutile_only or q == f"{CUTILE}.kernel" or not any(
                    kw.arg == "host" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False)
                    for kw in getattr(d, "keywords", []))
                continue
            span = range(d.lineno, d.end_lineno + 1)
            if q in DROPPABLE_DECORATORS:
                drop = {"decorator": ast.get_source_segment(mod.text, d), "qualified": q,
                        "file": mod.rel, "line": d.lineno, "of": stmt.name,
                        "short": DROPPABLE_DECORATORS[q][0], "reason": DROPPABLE_DECORATORS[q][1]}
                k.dropped.append(drop)
                self.dropped.append(drop)
                k.lines = [ln for ln in k.lines if ln not in span]
            else:
                self.problems.append(ImportBlocked(
                    f"{mod.rel}:{d.lineno}: decorator @{ast.get_source_segment(mod.text, d)} of "
                    f"'{stmt.name}' is not cuTile's ({q}), and tileport does not know that it leaves "
                    f"the function unchanged", mod.rel, d.lineno, "tool", q or ""))
        k.plain = kind == "function" and not cutile_only
        k.python = py if k.plain else None
        src = "\n".join(mod.lines[ln - 1] for ln in k.lines) + "\n"
        try:
            free = _free_names(src, mod.rel)
        except SyntaxError as exc:          # a statement that only parses in its module
            raise ImportFailed(f"{mod.path}:{stmt.lineno}: cannot analyse scopes: {exc.msg}") from None
        names = ", ".join(k.names)
        k.via = via if via.rsplit(" -> ", 1)[-1] == names else f"{via} -> {names}"
        torch = _torch_names(mod) & free
        if torch:
            free = (free - torch) | self.plan_torch(k, torch, free)
        pypos = TU.python_positions(stmt)
        for n in sorted(free - set(k.names)):
            nodes = [x for x in ast.walk(stmt) if isinstance(x, ast.Name) and x.id == n]
            why = next((pypos[id(x)] for x in nodes if id(x) in pypos), None)
            ln = _name_line(stmt, n)
            k.free[n] = (ln, f"{mod.rel}:{ln}, {why}" if why else None)
        self.resolve_free(k)

    def resolve_free(self, k: Kept) -> None:
        """Resolve the names ``k`` reads, each with where Python evaluates it (a name in a
        plain function's body is Python's too once Python may run that function)."""
        for n, (ln, why) in k.free.items():
            py = why or (f"{k.python}, which calls '{k.names[0]}'" if k.python else None)
            self.resolve(k.module, n, k.module.rel, ln, k.via, py)

    def plan_torch(self, k: Kept, torch: set[str], free: set[str]) -> set[str]:
        """Rewrite the uses of torch in ``k`` that cuTile compiles like its own spelling
        (:mod:`tileport.model.torch_uses`); every other use is a problem naming it and its line.
        Returns the names the rewrites read (cuda.tile's, for ``ct.int32``)."""
        mod = k.module
        spelling = _cutile_spelling(mod, free)
        rewrites, refusals = TU.plan(k.stmt, mod.lines, torch, spelling)
        k.rewrites = rewrites
        for r in sorted(refusals, key=lambda r: r.line):
            name = r.text.split(".")[0]
            imp = min(mod.tree.body[i].lineno for i in mod.bindings[name])
            self.problems.append(ImportBlocked(
                f"{mod.rel}:{r.line}: '{name}' (used by {k.via}; imported at {mod.rel}:{imp} from "
                f"torch) is torch: {r.reason}; the kernel needs torch there, which tileport's CPU "
                f"side does not have and never imports", mod.rel, r.line, "tool", name))
        return {spelling.split(".")[0]} if any(r.kind == "dtype" for r in rewrites) else set()

    def check_rewrites(self) -> None:
        """A dtype rewrite stands only in a body that only cuTile runs: once the whole closure is
        known, a plain function that Python may run keeps torch's object there (BLOCKED)."""
        for k in self.kept.values():
            if k.python is None:
                continue
            for r in k.rewrites:
                if r.kind == "dtype":
                    self.problems.append(ImportBlocked(
                        f"{k.module.rel}:{r.line}: '{r.original.split('.')[0]}' (used by {k.via}) is "
                        f"torch: {r.original} could become {r.replacement.rstrip()} only where cuTile "
                        f"compiles it, but Python may also run '{r.function}' ({k.python}), and "
                        f"there {r.original} is torch's own object; the kernel needs torch there, "
                        f"which tileport's CPU side does not have", k.module.rel, r.line, "tool",
                        r.original.split(".")[0]))

    def keep_import(self, mod: Module, i: int, stmt, name: str, used_in: str, use_line: int,
                    via: str, py: str | None = None) -> None:
        line = stmt.lineno
        for a in stmt.names:
            if isinstance(stmt, ast.Import):
                bound = a.asname or a.name.split(".")[0]
                target = a.name
            else:
                bound = a.asname or a.name
                target = f"{_from_module(stmt, mod)}.{a.name}"
            if bound != name:
                continue
            root = target.split(".")[0]
            where = (f"{used_in}:{use_line}: '{name}' (used by {via}; imported at {mod.rel}:{line} "
                     f"from {_from_module(stmt, mod) if isinstance(stmt, ast.ImportFrom) else target})")
            if root == "torch":
                self.problems.append(ImportBlocked(
                    f"{where} is torch: the kernel needs torch, which tileport's CPU side does not "
                    f"have and never imports", used_in, use_line, "tool", name))
            elif (target == CUTILE or target.startswith(CUTILE + ".") or root in sys.stdlib_module_names
                  or root in IMPORTABLE):
                if isinstance(stmt, ast.Import):
                    text = f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                else:
                    text = f"from {_from_module(stmt, mod)} import {a.name}" + (f" as {a.asname}" if a.asname else "")
                key = (mod.rel, i, bound)
                if key not in self.kept:
                    self.kept[key] = Kept(mod, i, stmt, [bound], [line], "import", text)
            elif root == self.loader.wheel.top:
                if isinstance(stmt, ast.Import):
                    self.problems.append(ImportBlocked(
                        f"{where} is a module object; tileport copies definitions, not modules",
                        used_in, use_line, "tool", name))
                    continue
                src_mod = _from_module(stmt, mod)
                other = self.loader.module(src_mod)
                if other is None or (a.name not in other.bindings
                                     and self.loader.module(f"{src_mod}.{a.name}") is not None):
                    what = "a module object" if other is not None else "from a module the wheel lacks"
                    self.problems.append(ImportBlocked(
                        f"{where} is {what}; tileport copies definitions only",
                        used_in, use_line, "tool", name))
                    continue
                self.resolve(other, a.name, mod.rel, line, via, py)
                if bound != a.name:
                    self.aliases.append((bound, a.name, mod, line))
            else:
                self.problems.append(ImportBlocked(
                    f"{where} is neither cuda.tile nor the standard library nor {self.loader.wheel.name}"
                    f" nor one of {sorted(IMPORTABLE)}: tileport copies no other third-party import "
                    f"into kernel.py", used_in, use_line, "tool", name))


def nested_kernels(mod: Module) -> dict[str, tuple[str, int]]:
    """Kernels defined inside a module-level function (a kernel factory), e.g. TileGym's
    ``_make_nvfp4_kernel(occupancy)``: ``{name: (outer function, line of the def)}``, found by
    a decorator that ends in ``.kernel`` / ``.kernel(...)`` on a nested def."""
    out = {}
    for st in mod.tree.body:
        if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(st):
            if node is st or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for d in node.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                if isinstance(f, ast.Attribute) and f.attr == "kernel":
                    out.setdefault(node.name, (st.name, node.lineno))
    return out


def factory_reason(mod: Module, kernel: str) -> tuple[int, str]:
    """Why ``kernel``, defined inside a module-level function of ``mod`` (a kernel factory, see
    :func:`nested_kernels`), cannot be imported: ``(line of its def, message)``. The message
    names the factory's own names the kernel's decorators or body read (their values are the
    factory's arguments at run time) and where the module calls the factory."""
    outer_name, line = nested_kernels(mod)[kernel]
    outer = next(st for st in mod.tree.body
                 if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == outer_name)
    inner = next(n for n in ast.walk(outer) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == kernel and n.lineno == line)
    table = next(t for t in symtable.symtable(mod.text, mod.rel, "exec").get_children()
                 if t.get_name() == outer_name and t.get_lineno() == outer.lineno)
    own = set(table.get_locals()) - {kernel}
    inner_local = {a.arg for a in ast.walk(inner.args) if isinstance(a, ast.arg)} | {
        n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    uses = {}
    for d in inner.decorator_list:
        for n in ast.walk(d):
            if isinstance(n, ast.Name) and n.id in own:
                uses.setdefault(n.id, n.lineno)
    for n in ast.walk(ast.Module(body=inner.body, type_ignores=[])):
        if isinstance(n, ast.Name) and n.id in own and n.id not in inner_local:
            uses.setdefault(n.id, n.lineno)
    calls = []
    for st in mod.tree.body:
        for n in ast.walk(st):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == outer_name:
                calls.append(f"{n.lineno}" + (f" in {st.name}" if hasattr(st, "name") else ""))
    reads = (f"its decorators and body read the factory's own "
             f"{', '.join(f'{n} (line {ln})' for n, ln in sorted(uses.items(), key=lambda x: x[1]))}, "
             f"whose values are the arguments of that call, not text of the module"
             if uses else "it reads no name of the factory's own, but it is still a new object per call")
    return line, (
        f"'{kernel}' is defined inside the function '{outer_name}' (line {outer.lineno}), a kernel "
        f"factory: the kernel object exists only when Python calls '{outer_name}' at run time "
        f"({'called at line ' + ', '.join(calls) if calls else 'never called in the module'}); "
        f"{reads}. tileport imports module-level kernels only: importing this one would mean "
        f"choosing those values and re-indenting the body, which moves every op's column away "
        f"from the wheel's text")


# ---------------------------------------------------------------------------------- layout
def layout(ex: Extraction, wheel: Wheel, pin_file: str
           ) -> tuple[str, dict[int, str], list[dict], list[dict]]:
    """kernel.py's text, its line map ``{line: "module file:line"}``, the kept definitions
    ``[{name, kind, lines: [a, b], file, source_lines: [c, d]}]`` (lines 1-based, inclusive) and
    the rewritten uses of torch ``[{kind, function, file, line, kernel_line, col, original,
    replacement, keeps_columns, evidence}]`` (``col``: 0-based UTF-8 offset in the line).

    Raises:
        ImportBlocked: two kept statements bind one name with different text.
    """
    order = {m: i for i, m in enumerate(reversed(ex.module_order))}   # dependencies first
    imports = [k for k in ex.kept.values() if k.kind == "import"]
    defs = [k for k in ex.kept.values() if k.kind != "import"]
    imports.sort(key=lambda k: (k.module.name != ex.module_name, order[k.module.name], k.start, k.text))
    defs.sort(key=lambda k: (order[k.module.name], k.start))
    chunks: list[tuple[Kept | None, list[tuple[str, str | None]]]] = []   # (kept, [(text, origin)])
    seen_text: dict[str, str] = {}
    bound: dict[str, tuple[str, Kept]] = {}

    def claim(k: Kept, text: str) -> bool:
        """False when an identical statement already binds the same names (skip it)."""
        for n in k.names:
            if n in bound:
                prev_text, prev = bound[n]
                if prev_text == text:
                    return False
                raise ImportBlocked(
                    f"'{n}' is bound by {prev.module.rel}:{prev.start} and by {k.module.rel}:{k.start} "
                    f"with different definitions; one kernel.py cannot hold both", k.module.rel,
                    k.start, "tool", n)
        for n in k.names:
            bound[n] = (text, k)
        return True

    for k in imports:
        if k.text in seen_text or not claim(k, k.text):
            continue
        seen_text[k.text] = k.module.rel
        chunks.append((k, [(k.text, f"{k.module.rel}:{k.start}")]))
    body_chunks = []
    for k in defs:
        text = "\n".join(k.line_text(ln) for ln in k.lines)
        if not claim(k, text):
            continue
        body_chunks.append((k, [(k.line_text(ln), f"{k.module.rel}:{ln}") for ln in k.lines]))
    alias_lines = []
    for alias, name, m, line in ex.aliases:
        a = Kept(m, -line, None, [alias], [line], "alias", f"{alias} = {name}")
        if claim(a, a.text):
            alias_lines.append((a, [(a.text, f"{m.rel}:{line}")]))
    # dependency modules' definitions, then aliases, then the module's own
    dep = [c for c in body_chunks if c[0].module.name != ex.module_name]
    own = [c for c in body_chunks if c[0].module.name == ex.module_name]
    chunks += dep + alias_lines + own

    # header (its length is known before the body is placed)
    n_drop = len(ex.dropped)
    rewrites = [(k, r) for k, _ in chunks for r in k.rewrites]
    header_len = (8 + len(chunks) + (1 + 2 * n_drop if n_drop else 0)
                  + (1 + len(rewrites) if rewrites else 0))
    body: list[str] = []
    lmap: dict[int, str] = {}
    kept_defs: list[dict] = []
    line_no = header_len
    prev_kind = None
    for k, lines in chunks:
        kind = k.kind if k.kind in ("import", "alias") else "def"
        sep = 0 if prev_kind is None or (kind == prev_kind and kind != "def") else 2
        body += [""] * sep
        line_no += sep
        first = line_no + 1
        for text, org in lines:
            body.append(text)
            line_no += 1
            lmap[line_no] = org
        kept_defs.append({"name": ", ".join(k.names), "kind": k.kind, "lines": [first, line_no],
                          "file": k.module.rel, "source_lines": [k.start, k.end]})
        prev_kind = kind
    header = [
        "# Imported by tileport (rule import_source) from an installed wheel; do not edit: it is",
        "# rewritten when the wheel's module changes. Read as text, never imported there.",
        f"# wheel: {wheel.name} {wheel.version}, sha256 {wheel.sha256 or '(not pinned)'} ({pin_file})",
        f"# module: {ex.module_name} ({ex.main.rel})",
        f"# kernels: {', '.join(ex.kernels)}",
        "# kept (this file's lines <- the wheel's lines); everything else of the module (torch",
        "# wrappers, autotuning, backend registration) is not copied:",
    ]
    for d, (k, _) in zip(kept_defs, chunks):
        a, b = d["lines"]
        c, e = d["source_lines"]
        what = k.text if k.kind in ("import", "alias") else f"{d['kind']} {d['name']}"
        header.append(f"#   {a if a == b else f'{a}-{b}'} <- {d['file']}:{c if c == e else f'{c}-{e}'}  {what}")
    if n_drop:
        header.append("# left out (not cuTile's; the kernel is the same without it):")
        for dr in ex.dropped:
            header.append(f"#   @{dr['decorator']} of {dr['of']} ({dr['file']}:{dr['line']}, {dr['qualified']}):")
            header.append(f"#     {dr['short']}")
    rewritten = []
    if rewrites:
        where = {v: k for k, v in lmap.items()}
        header.append("# rewritten: uses of torch that cuTile compiles like its own spelling (the "
                      "evidence: import.json's findings):")
        for k, r in rewrites:
            line = where[f"{k.module.rel}:{r.line}"]
            header.append(f"#   {line} <- {k.module.rel}:{r.line}  {r.shown}")
            rewritten.append({"kind": r.kind, "function": r.function, "file": k.module.rel,
                              "line": r.line, "kernel_line": line, "col": r.col,
                              "source_text": k.module.lines[r.line - 1].strip(),
                              "original": r.original, "replacement": r.replacement.rstrip(),
                              "keeps_columns": r.keeps_columns, "evidence": r.evidence})
    header.append("#")
    assert len(header) == header_len, (len(header), header_len)
    return "\n".join(header + body) + "\n", lmap, kept_defs, rewritten


# ---------------------------------------------------------------------------------- stage
def module_files(module: str, kernels: list[str], pin_file: str | Path | None = None) -> list[str]:
    """The files of the installed distribution that importing ``kernels`` of ``module`` reads
    (absolute paths; the rule's inputs, so a new wheel reruns exactly the operators whose
    source files changed). Never raises: a module or distribution that cannot be read gives
    what was read before the problem (the importer's verdict names it).

    Snakemake asks for every imported operator each time it builds the DAG (about 25 ms of
    extraction each, 2.3 s for the 92 operators of 2026-12-06), so the answer is kept on disk
    (:func:`_kept_files`) and read back while none of the files it names (their bytes), nor the
    names in their folders, nor the importer's code changed: 0.5 s for the 92."""
    try:
        wheel = find_wheel(module)
        key = _files_key(module, kernels, wheel)
        kept = _kept_files(key, wheel.root)
        if kept is not None:
            return [str(wheel.root / rel) for rel in kept]
        loader = Loader(wheel, check_record=False)
        ex = Extraction(loader, module, kernels)
        try:
            ex.run()
        except (ImportBlocked, ImportFailed):
            pass
        _keep_files(key, wheel.root, list(loader.files))
        return [str(wheel.root / rel) for rel in loader.files]
    except Exception:  # DAG construction must not fail on one operator's source
        return []


def _files_key(module: str, kernels: list[str], wheel: Wheel) -> str:
    """sha256 of what :func:`module_files` answers from besides the wheel's files: the module,
    the kernels, the distribution (name, version, site folder) and the bytes of the importer's
    code (its import closure in the package, :func:`tileport.core.closure.import_closure`)."""
    h = hashlib.sha256(json.dumps([module, sorted(kernels), wheel.name, wheel.version, str(wheel.root)]).encode())
    h.update(_code_sha().encode())
    return h.hexdigest()


@lru_cache(maxsize=1)
def _code_sha() -> str:
    """sha256 of the importer's code: its import closure in the package, read once per process."""
    from tileport.core.closure import import_closure

    h = hashlib.sha256()
    for f in import_closure(__name__, Path(__file__).resolve().parents[1]):
        h.update(f.read_bytes())
    return h.hexdigest()


def _stamps(root: Path, rels: list[str]) -> dict[str, str]:
    """``{path: sha256}`` of the files ``rels`` (their bytes) and of their folders (the sorted
    names in each: a module added beside them, e.g. a sibling the extraction looked for and
    missed, changes it); raises OSError when one is gone."""
    out = {r: hashlib.sha256((root / r).read_bytes()).hexdigest() for r in rels}
    for d in sorted({str(Path(r).parent) for r in rels}):
        out[d + "/"] = hashlib.sha256("\0".join(sorted(os.listdir(root / d))).encode()).hexdigest()
    return out


def _kept_files(key: str, root: Path) -> list[str] | None:
    """The files kept under ``key`` (:func:`tileport.core.toolchain.read_kept`) if every stamp
    still holds, else None."""
    kept = toolchain.read_kept("module-files", key)
    try:
        if kept is None or _stamps(root, kept["files"]) != kept["stamps"]:
            return None
        return kept["files"]
    except (OSError, KeyError, TypeError):
        return None


#: module_files answers kept on disk (about 5 KB each): the corpus's 92 imported operators in
#: each checkout and test tree on the machine; with 256, three checkouts evicted each other's and
#: every DAG build extracted all 92 again (6 s of a whole-corpus dry run, 2026-12-06)
KEPT_ANSWERS = 2048


def _keep_files(key: str, root: Path, rels: list[str]) -> None:
    """Keep ``rels`` under ``key`` with their stamps (the :data:`KEPT_ANSWERS` least recently
    used stay)."""
    try:
        toolchain.keep("module-files", key, {"files": rels, "stamps": _stamps(root, rels)}, KEPT_ANSWERS)
    except OSError:         # a file gone while stamping it: nothing kept
        pass


def extract(module: str, kernels: list[str], pin_file: str | Path) -> dict:
    """Import ``kernels`` of ``module`` from the installed wheel.

    Returns ``{"text", "map", "kept", "dropped", "rewritten", "problems", "wheel", "files"}``
    where ``problems`` lists :class:`ImportBlocked` (empty when the import succeeded) and
    ``rewritten`` the uses of torch replaced (see :func:`layout`).

    Raises:
        ImportFailed: the distribution cannot be used (see :func:`find_wheel`, :class:`Loader`).
    """
    wheel = find_wheel(module, pin_file)
    loader = Loader(wheel)
    ex = Extraction(loader, module, kernels)
    try:
        ex.run()
    except ImportBlocked as exc:
        ex.problems.append(exc)
    text, lmap, kept, rewritten = "", {}, [], []
    if not ex.problems:
        try:
            text, lmap, kept, rewritten = layout(ex, wheel, Path(pin_file).name)
        except ImportBlocked as exc:
            ex.problems.append(exc)
    return {"text": text, "map": lmap, "kept": kept, "dropped": ex.dropped, "rewritten": rewritten,
            "problems": ex.problems,
            "wheel": {"name": wheel.name, "version": wheel.version, "sha256": wheel.sha256,
                      "site": str(wheel.root)},
            "files": dict(loader.files), "main": ex.main.rel if ex.main else None}


def run(op_dir: str | Path, out_py: str | Path, out_map: str | Path, out_json: str | Path, op: str,
        pin_file: str | Path) -> dict:
    """Stage entry point: write ``results/<op>/src/kernel.py``, its line map and the verdict
    ``import.json`` (PASS / BLOCKED / ERROR; see the module doc). Never raises on bad input."""
    op_dir = Path(op_dir)
    src = source.source_of(op_dir) or {}
    module = src.get("module", "")
    mpath = op_dir / "manifest.yaml"
    kernels = list(src.get("kernels") or [])
    if not kernels:
        try:
            kernels = list(manifest.load(mpath)["kernels"])
        except Exception as exc:
            kernels = []
            return _fail(out_py, out_map, out_json, op, "ERROR", "kernel", f"{exc}", "manifest",
                         loc(mpath, None), {"module": module})
    details = {"module": module, "kernels": kernels}
    try:
        res = extract(module, kernels, pin_file)
    except ImportFailed as exc:
        return _fail(out_py, out_map, out_json, op, "ERROR", "env", str(exc), "environment", None, details)
    details.update(wheel=res["wheel"], files=res["files"], module_file=res["main"],
                   dropped=res["dropped"])
    if res["problems"]:
        probs = res["problems"]
        owner = "kernel" if any(p.owner == "kernel" for p in probs) else "tool"
        findings = [Finding("unsupported" if p.owner == "tool" else "input", "critical", p.owner,
                            str(p), ref=loc(p.file, p.line, p.name)) for p in probs]
        details["blocked"] = [{"name": p.name, "file": p.file, "line": p.line, "owner": p.owner,
                               "reason": str(p)} for p in probs]
        return _fail(out_py, out_map, out_json, op, "BLOCKED", owner,
                     f"{len(probs)} name(s) cannot be imported; first: {probs[0]}", None, None,
                     details, findings)
    atomic_write_text(out_py, res["text"])
    atomic_write_text(out_map, json.dumps({
        "schema": "tileport.source_map/1", "kernel_py": str(out_py), "module": module,
        "wheel": res["wheel"], "lines": {str(k): v for k, v in sorted(res["map"].items())}},
        indent=1) + "\n")
    details["kept"] = res["kept"]
    details["rewritten"] = res["rewritten"]
    findings = [Finding("signature", "info", "tool",
                        f"{d['file']}:{d['line']}: decorator @{d['decorator']} of {d['of']} left out: "
                        f"{d['reason']}", ref=loc(d["file"], d["line"], f"@{d['decorator']}"))
                for d in res["dropped"]]
    for r in res["rewritten"]:
        what = ("annotation dropped" if r["kind"] == "annotation" else
                f"'{r['original']}' -> '{r['replacement']}'")
        cols = ("" if r["keeps_columns"] else
                "; the rest of the line moves right (the replacement is longer), so cuTile's "
                "locations after it on this line are not the wheel's columns")
        findings.append(Finding(
            "signature" if r["kind"] == "annotation" else "constant", "info", "tool",
            f"{r['file']}:{r['line']}: `{r['source_text']}` (in {r['function']}): {what} in "
            f"{out_py}:{r['kernel_line']}: {r['evidence']}{cols}",
            ref=loc(r["file"], r["line"], r["original"])))
    w = res["wheel"]
    n_defs = sum(1 for k in res["kept"] if k["kind"] != "import")
    summary = (f"{len(kernels)} kernel(s) of {module} from {w['name']} {w['version']}: "
               f"{n_defs} definition(s) and {len(res['kept']) - n_defs} import(s) kept"
               + (f", {len(res['dropped'])} decorator(s) left out" if res["dropped"] else "")
               + (f", {len(res['rewritten'])} use(s) of torch rewritten" if res["rewritten"] else ""))
    return write(Verdict(stage="import_source", op=op, verdict="PASS", owner=None, summary=summary,
                         findings=findings, details=details,
                         artifacts={"kernel": str(out_py), "map": str(out_map)}), out_json)


def _fail(out_py, out_map, out_json, op, verdict, owner, msg, category, where, details, findings=None):
    head = f"# import_source {verdict}: see {Path(out_json).name}\n"
    atomic_write_text(out_py, head + "".join(f"# {ln}\n" for ln in msg.splitlines()))
    atomic_write_text(out_map, json.dumps({"schema": "tileport.source_map/1", "lines": {}}) + "\n")
    findings = findings or [Finding(category, "critical", owner, msg, ref=where)]
    return write(Verdict(stage="import_source", op=op, verdict=verdict, owner=owner,
                         summary=msg.splitlines()[0][:1500], findings=findings, details=details),
                 out_json)
