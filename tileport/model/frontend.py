"""The front end of the analyser and the translator: one parsed kernel model per operator.

:func:`load` reads an operator once -- its manifest and its kernel file (its own
``operators/<op>/kernel.py``, or ``results/<op>/src/kernel.py`` when the manifest names a
wheel's module with ``source:``) -- and returns an :class:`OperatorModel`: the parsed module
(its ``ast``, the name ``cuda.tile`` is imported as, the module-level helper functions), one
:class:`KernelModel` per kernel the manifest lists (its ``ast`` function, parameters with
roles, dtypes and constexpr types, the constexpr values of every variant, the cuTile
constructs it uses with their lines) and the findings of the manifest against the kernel.

Both consumers read this one model: the analyser (:mod:`tileport.cpu.analyze`) reports on it and
asks the translator (:mod:`tileport.translate`) to translate every kernel of it, the translator
consumes it; neither parses kernel.py or loads the manifest on its own, so a kernel the
analyser passes is one the translator has rules for. Nothing here imports the kernel or needs
a GPU.
"""
from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from tileport.core import source
from tileport.model import constructs, torch_uses
from tileport.model import manifest as tp_manifest
from tileport.model.constants import is_ct, module_constants


class AnalysisError(ValueError):
    """kernel.py cannot be analysed (syntax error, no kernels); message names file:line.
    ``owner``: who must act (``kernel``; ``tool`` for an import tileport could not do)."""

    def __init__(self, message: str, owner: str = "kernel"):
        super().__init__(message)
        self.owner = owner


def plain_annotated_assignments(tree: ast.Module) -> ast.Module:
    """``name: T = value`` read as ``name = value`` and a bare ``name: T`` as nothing, in place,
    line numbers kept: cuTile Python 1.7.0 ignores the annotation of a local
    (cuda/tile/_passes/ast2hir.py ``_ann_assign_stmt``), so ``HALF_DIM: ConstInt = ROPE_DIM // 2``
    (FlashInfer's rope_quantize_fp8) is the constexpr arithmetic it assigns. Returns ``tree``."""
    class _Plain(ast.NodeTransformer):
        def visit_AnnAssign(self, node: ast.AnnAssign):
            if node.value is None:
                return ast.copy_location(ast.Pass(), node)
            return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
    return ast.fix_missing_locations(_Plain().visit(tree))


def tile_alias(tree: ast.Module) -> str:
    """The local name ``cuda.tile`` is imported as: ``ct`` for ``import cuda.tile as ct`` or
    ``from cuda import tile as ct``.

    Raises:
        AnalysisError: when the module never imports ``cuda.tile`` under a plain name.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "cuda.tile":
                    if not a.asname:
                        raise AnalysisError(f"line {node.lineno}: `import cuda.tile` without an "
                                            f"alias: write `import cuda.tile as ct`")
                    return a.asname
        if isinstance(node, ast.ImportFrom) and node.module == "cuda":
            for a in node.names:
                if a.name == "tile":
                    return a.asname or "tile"
    raise AnalysisError("kernel.py does not `import cuda.tile as <alias>`")


def _constant_type(sub: ast.Subscript) -> str:
    """'int' | 'float' | 'bool' of a ``ct.Constant[T]`` annotation; the source text of T for any
    other T (a constexpr the manifest cannot give a value of)."""
    t = sub.slice
    return t.id if isinstance(t, ast.Name) and t.id in ("int", "float", "bool") else ast.unparse(t)


def constexpr_aliases(tree: ast.Module, alias: str) -> dict[str, str]:
    """Module-level names bound to ``ct.Constant[T]`` (e.g. ``ConstInt``) -> 'int'/'float'/'bool'."""
    out = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Subscript)
                and is_ct(node.value.value, alias, "Constant")):
            out[node.targets[0].id] = _constant_type(node.value)
    return out


def kernel_functions(tree: ast.Module, alias: str) -> list[ast.FunctionDef]:
    """Functions decorated with ``@ct.kernel`` (with or without arguments)."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if is_ct(target, alias, "kernel"):
                    out.append(node)
    return out


def param_type(arg: ast.arg, alias: str, const_aliases: dict[str, str],
               scalars: dict | None = None) -> tuple[str, str | None]:
    """(kind, detail) of a kernel parameter from its annotation and the manifest's ``scalars``.

    kind ``constexpr`` (detail: 'int'/'float'/'bool', or the text of another ``ct.Constant[T]``),
    ``scalar`` (detail: the annotation's scalar type ``f32`` for ``float``, ``i32`` for ``int``,
    ``i64`` for ``ct.ScalarInt64``, or None for an unannotated parameter the manifest lists
    under ``scalars``), or ``array`` (detail ``i64`` for ``ct.IndexedWithInt64``, else None).
    Facts: cuda-tile 1.7.0 ``cuda/tile/_stub.py`` (an int argument is int32 unless annotated
    ``ct.ScalarInt64``; arrays index with int32 unless annotated ``ct.IndexedWithInt64``).
    """
    ann = arg.annotation
    if ann is None:
        return ("scalar", None) if arg.arg in (scalars or {}) else ("array", None)
    if isinstance(ann, ast.Name) and ann.id in const_aliases:
        return "constexpr", const_aliases[ann.id]
    if isinstance(ann, ast.Subscript) and is_ct(ann.value, alias, "Constant"):
        return "constexpr", _constant_type(ann)
    if is_ct(ann, alias, "Constant"):
        return "constexpr", "(no type)"
    if isinstance(ann, ast.Name) and ann.id == "float":
        return "scalar", "f32"
    if isinstance(ann, ast.Name) and ann.id == "int":
        return "scalar", "i32"
    if is_ct(ann, alias, "ScalarInt64"):
        return "scalar", "i64"
    if is_ct(ann, alias, "IndexedWithInt64"):
        return "array", "i64"
    return "array", None


def tile_dim_constexprs(fn: ast.FunctionDef, alias: str) -> set[str]:
    """Names used as entries of tile-shape tuples (``shape=`` of load/num_tiles, the shape of
    full/zeros/ones/reshape)."""
    out = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and is_ct(n.func, alias):
            shp = None
            if n.func.attr in ("load", "num_tiles"):
                shp = kw(n, "shape", 2)
            elif n.func.attr in ("full", "zeros", "ones"):
                shp = n.args[0] if n.args else kw(n, "shape")
            elif n.func.attr == "reshape":
                shp = n.args[1] if len(n.args) > 1 else kw(n, "shape")
            if isinstance(shp, ast.Tuple):
                out |= {e.id for e in shp.elts if isinstance(e, ast.Name)}
    return out


def static_test(test: ast.AST, constexprs: set[str]) -> bool:
    """True when an ``if`` test only reads constexpr parameters (names in ``constexprs``) and
    literals, under comparisons, boolean operators and arithmetic (``BM == 1``, ``GELU and not
    FAST``, ``STAGE & 1``, ``-N < 0``): cuTile evaluates it at compile time, so it selects code
    per variant."""
    ok = (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Name, ast.Constant, ast.Load,
          ast.boolop, ast.unaryop, ast.cmpop, ast.operator)
    for n in ast.walk(test):
        if not isinstance(n, ok) or (isinstance(n, ast.Name) and n.id not in constexprs):
            return False
    return True


def kw(call: ast.Call, name: str, pos: int | None = None):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if pos is not None and len(call.args) > pos:
        return call.args[pos]
    return None


def constructs_of(fn: ast.FunctionDef, alias: str, constexprs: set[str] = frozenset(),
                  helpers: set[str] = frozenset(), module: ast.Module | None = None) -> list[dict]:
    """The cuTile constructs one kernel's body uses, in line order: each ``{"call", "line"}``
    (1-based line of the kernel file) with what a reader of the port needs -- ``ct.<name>``
    calls (also ``t.<method>(...)`` spelling one; the array of a load/store/gather/scatter, the
    padding mode, tile shape and hints of a load/store, the axis and keepdims of a reduction),
    ``helper <name>`` (a call of a module-level function), ``for-range`` / ``for``,
    ``if-constexpr`` (a test on constexprs and literals only), ``if`` / ``while`` / ``ifexp``
    (run-time tests), ``array.shape[i]``, ``tile[new axes]``. An inventory, not a judgement:
    whether the translator has a rule for each is the translator's to say
    (:func:`tileport.cpu.analyze.analyse` asks it). A padding mode held in a name bound to a
    ``ct.PaddingMode`` member (module-level in ``module``, or in the kernel) is that member; any other
    expression (a helper's parameter) is recorded as its source text."""
    calls = []
    pads = {t.id: st.value.attr for st in [*(module.body if module else ()), *ast.walk(fn)]
            if isinstance(st, ast.Assign) and len(st.targets) == 1
            for t in st.targets if isinstance(t, ast.Name)
            and isinstance(st.value, ast.Attribute) and is_ct(st.value.value, alias, "PaddingMode")}
    for node in (n for stmt in fn.body for n in ast.walk(stmt)):
        line = getattr(node, "lineno", None)
        if isinstance(node, ast.Call):
            if is_ct(node.func, alias) or is_tile_method(node.func, alias):
                name = node.func.attr
                item = {"call": f"{alias}.{name}", "line": line}
                if name in ("load", "store", "gather", "scatter"):
                    arr = node.args[0].id if node.args and isinstance(node.args[0], ast.Name) else None
                    item["array"] = arr
                if name in ("load", "store"):
                    pm = kw(node, "padding_mode")
                    item["padding"] = ("UNDETERMINED" if pm is None
                                       else pm.attr
                                       if isinstance(pm, ast.Attribute) and is_ct(pm.value, alias, "PaddingMode")
                                       else pads.get(pm.id, pm.id) if isinstance(pm, ast.Name)
                                       else ast.unparse(pm))
                    shp = kw(node, "shape", 2)
                    if shp is not None:
                        item["tile_shape"] = ast.unparse(shp)
                    for hint in ("latency", "allow_tma"):
                        if kw(node, hint) is not None:
                            item[hint] = ast.unparse(kw(node, hint))
                if name in constructs.REDUCTIONS:
                    ax = kw(node, "axis", 1)
                    item["axis"] = ast.unparse(ax) if ax is not None else None
                    kd = kw(node, "keepdims")
                    item["keepdims"] = ast.unparse(kd) if kd is not None else "False"
                calls.append(item)
            elif isinstance(node.func, ast.Name) and node.func.id in helpers:
                calls.append({"call": f"helper {node.func.id}", "line": line})
        elif isinstance(node, ast.For):
            it = node.iter
            is_range = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                        and it.func.id == "range" and 1 <= len(it.args) <= 3)
            calls.append({"call": "for-range" if is_range else "for", "line": line,
                          "target": ast.unparse(node.target)})
        elif isinstance(node, ast.If) and static_test(node.test, constexprs):
            calls.append({"call": "if-constexpr", "line": line, "test": ast.unparse(node.test)})
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            calls.append({"call": type(node).__name__.lower(), "line": line, "test": ast.unparse(node.test)})
        elif isinstance(node, ast.Subscript) and is_shape_subscript(node):
            calls.append({"call": "array.shape[i]", "line": line})
        elif isinstance(node, ast.Subscript) and is_newaxis_subscript(node):
            calls.append({"call": "tile[new axes]", "line": line})
    calls.sort(key=lambda c: c["line"] or 0)
    return calls


def is_tile_method(func: ast.AST, alias: str) -> bool:
    """``t.astype(...)``, ``t.reshape(...)`` ...: a Tile method spelling a ct function."""
    return (isinstance(func, ast.Attribute) and func.attr in constructs.TILE_METHODS
            and not (isinstance(func.value, ast.Name) and func.value.id == alias))


def is_newaxis_subscript(node: ast.Subscript) -> bool:
    """``x[:, None]``, ``x[None, :, :]``: new unit axes of a tile (``ct.expand_dims``)."""
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return all((isinstance(s, ast.Constant) and s.value is None)
               or (isinstance(s, ast.Slice) and s.lower is None and s.upper is None and s.step is None)
               for s in elts) and any(isinstance(s, ast.Constant) for s in elts)


def is_shape_subscript(node: ast.Subscript) -> bool:
    """``a.shape[i]`` with ``i`` an int literal (``-1`` counts from the last axis)."""
    return (isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
            and shape_axis(node) is not None)


def shape_axis(node: ast.Subscript) -> int | None:
    """The int literal ``i`` (or ``-i``) of ``a.shape[i]``; None for anything else."""
    s = node.slice
    neg = isinstance(s, ast.UnaryOp) and isinstance(s.op, ast.USub)
    s = s.operand if neg else s
    if isinstance(s, ast.Constant) and type(s.value) is int:
        return -s.value if neg else s.value
    return None




@dataclass
class KernelModel:
    """One ``@ct.kernel`` of an operator as its manifest describes it.

    ``params``: in order, dicts with ``name``, ``kind`` (``array`` / ``scalar_<t>`` /
    ``constexpr``), ``line`` and, by kind, ``ndim``/``role``/``dtype``/``list``/``alias_group``/
    ``index_dtype``, ``dtype``/``annotated``, ``ctype``. ``constexprs``: the names its variants
    set; ``variants``: ``[{"id", "dtype", "constexprs", "arrays", "compiler_hints"?}]`` (the
    constexpr values per variant); ``calls``: the cuTile constructs it uses, each with its
    ``line`` (:func:`constructs_of`); ``grid``: the manifest's launch grid expression."""

    name: str
    fn: ast.FunctionDef
    params: list[dict]
    constexprs: list[str]
    variants: list[dict]
    calls: list[dict]
    grid: str

    @property
    def line(self) -> int:
        return self.fn.lineno

    def info(self) -> dict:
        """The kernel as ``analysis.json`` records it (``details.kernels[i]``)."""
        return {"name": self.name, "line": self.line, "params": self.params, "calls": self.calls,
                "grid": self.grid, "loops": sum(1 for c in self.calls if c["call"].startswith("for")),
                "constexprs": self.constexprs, "variants": self.variants,
                "scalars": {p["name"]: p["dtype"] for p in self.params if p["kind"].startswith("scalar")}}


@dataclass
class OperatorModel:
    """One operator read once: manifest, parsed kernel file, its kernels and the findings of
    the manifest against them (``findings``: dicts with ``construct``, ``file``, ``line``,
    ``reason``, ``owner`` -- ``manifest``, or ``tool`` with ``kind: undescribable`` for what the
    manifest format cannot say --, ``category: manifest`` and ``kernel``, None for the operator's).

    ``helpers``: the module-level functions that are not kernels (cuTile inlines them)."""

    op: str
    op_dir: Path
    manifest: dict
    kernel_file: str
    tree: ast.Module
    alias: str
    kernels: list[KernelModel]
    findings: list[dict] = field(default_factory=list)

    @property
    def helpers(self) -> dict[str, ast.FunctionDef]:
        kernels = {f.name for f in kernel_functions(self.tree, self.alias)}
        return {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef) and n.name not in kernels}

    def kernel(self, name: str) -> KernelModel | None:
        return next((k for k in self.kernels if k.name == name), None)

    def findings_of(self, kernel: str) -> list[dict]:
        """The manifest findings that concern ``kernel`` (its own and the operator's)."""
        return [u for u in self.findings if u.get("kernel") in (None, kernel)]

    def details(self) -> dict:
        """The model as ``analysis.json``'s ``details`` records it (``unsupported``: the manifest
        findings; the analyser adds the constructs the translator lacks)."""
        man = self.manifest
        return {
            "op": man["op"],
            "kernel_file": self.kernel_file,
            "manifest": man["_path"],
            "tile_alias": self.alias,
            "kernels": [k.info() for k in self.kernels],
            "dtypes": list(dict.fromkeys(v.dtype for v in tp_manifest.variants(man))),
            "constexprs": list(dict.fromkeys(n for k in self.kernels for n in k.constexprs)),
            "variants": [{"id": v.id, "dtype": v.dtype, "constexprs": v.constexprs} for v in tp_manifest.variants(man)],
            "hints": man.get("hints", {}),
            "unsupported": [dict(u) for u in self.findings],
        }


def load(op_dir: str | Path) -> OperatorModel:
    """Read the operator folder ``op_dir`` (``operators/<op>``) into its model: the manifest,
    the kernel file parsed once, every kernel the manifest lists, and the manifest's findings
    against them (a manifest that disagrees with the kernel is a finding, not an error).

    Raises:
        manifest.ManifestError: malformed manifest (file:line: key: cause).
        AnalysisError: unreadable kernel.py, syntax error (file:line), no ``@ct.kernel``.
    """
    op_dir = Path(op_dir)
    man = tp_manifest.load(op_dir / "manifest.yaml")
    mpath = Path(man["_path"])
    mtext = mpath.read_text()      # for the line numbers of manifest findings
    kpath = source.kernel_py(op_dir)
    try:
        source.check_imported(op_dir)
    except source.SourceBlocked as exc:
        raise AnalysisError(str(exc), exc.owner) from None
    try:
        src = kpath.read_text()
    except OSError as exc:
        raise AnalysisError(f"{kpath}: cannot read: {exc.strerror}") from None
    # torch.int32 / cp.float32 in a kernel body: read as cuTile compiles them (ct.int32, ...)
    src, _ = torch_uses.plain_kernel_text(src)
    try:
        tree = plain_annotated_assignments(ast.parse(src, filename=str(kpath)))
    except SyntaxError as exc:
        raise AnalysisError(f"{kpath}:{exc.lineno or 1}: syntax error: {exc.msg}") from None
    except ValueError as exc:          # e.g. NUL bytes in the source
        raise AnalysisError(f"{kpath}:1: syntax error: {exc}") from None
    try:
        alias = tile_alias(tree)
    except AnalysisError as exc:
        m = re.match(r"line (\d+): (.*)", str(exc))
        raise AnalysisError(f"{kpath}:{m.group(1) if m else 1}: {m.group(2) if m else exc}") from None
    consts = constexpr_aliases(tree, alias)
    module_consts = module_constants(tree, alias)
    fns = {f.name: f for f in kernel_functions(tree, alias)}
    kvariants = tp_manifest.kernel_variants(man)
    kernels, findings = [], []

    def mline(keypath: list) -> int:
        return tp_manifest._yaml_line(mtext, keypath) or 1

    def mismatch(kname, construct, line, reason, file=None, owner="manifest", kind="manifest"):
        """A finding on the manifest: ``owner`` manifest (it disagrees with the kernel: edit the
        manifest) or tool (kind ``undescribable``: the manifest format has no words for it)."""
        findings.append({"construct": construct, "file": str(file or mpath), "line": line,
                            "reason": reason, "owner": owner, "category": "manifest", "kind": kind,
                            "kernel": kname})

    for kname, kman in man["kernels"].items():
        if kname not in fns:
            mismatch(kname, f"kernel {kname}", mline(["kernels", kname]),
                     f"the manifest lists kernel '{kname}' but kernel.py has no @{alias}.kernel of that "
                     f"name; write one of {sorted(fns)} (the function's name as kernel.py spells it)")
            continue
        fn = fns[kname]
        kvs = kvariants[kname]
        src_key = tp_manifest.variant_source(man, kname)
        src_words = "/".join(src_key)
        cfg_keys = list(kvs[0].constexprs) if kvs else []
        kline = mline(["kernels", kname])
        for extra, what in ((fn.args.vararg, "*"), (fn.args.kwarg, "**")):
            if extra is not None:
                mismatch(kname, f"parameter {what}{extra.arg}", kline,
                         f"{kname} takes {what}{extra.arg}: the manifest describes a kernel's named "
                         f"positional parameters only (no words for variadic parameters)",
                         owner="tool", kind="undescribable")
        for a in fn.args.kwonlyargs + fn.args.posonlyargs:
            mismatch(kname, f"parameter {a.arg}", kline,
                     f"{kname} takes {a.arg} as a keyword-only or positional-only parameter: the "
                     f"manifest describes plain positional parameters only", owner="tool", kind="undescribable")
        params = []
        for a in fn.args.args:
            kind, detail = param_type(a, alias, consts, kman.get("scalars"))
            p = {"name": a.arg, "kind": kind, "line": a.lineno}
            if kind == "array":
                spec = kman["arrays"].get(a.arg)
                if spec is None:
                    mismatch(kname, f"parameter {a.arg}", kline,
                             f"{kname}'s parameter {a.arg} (kernel.py:{a.lineno}) is neither under "
                             f"kernels/{kname}/arrays nor under kernels/{kname}/scalars; write "
                             f"{a.arg}: {{ndim: <rank>, role: input}} under arrays, or {a.arg}: i32 (or f32) "
                             f"under scalars for a runtime number")
                else:
                    p.update(ndim=spec["ndim"], role=spec["role"], dtype=spec.get("dtype", "{dtype}"))
                    if spec.get("list"):
                        p["list"] = True
                    if spec.get("alias_group"):
                        p["alias_group"] = spec["alias_group"]
                    if detail == "i64":
                        p["index_dtype"] = "i64"
                if a.arg in kman.get("scalars", {}):
                    mismatch(kname, f"scalar {a.arg}", mline(["kernels", kname, "scalars", a.arg]),
                             f"{a.arg} is annotated as an array in kernel.py:{a.lineno} but listed under "
                             f"scalars; remove it from scalars")
            elif kind == "scalar":
                _scalar_param(p, detail, kman, kname, a, mline, mismatch)
            else:
                p["ctype"] = detail
                _constexpr_param(detail, kvs, cfg_keys, kname, a, man, src_key, src_words, mline, mismatch)
            params.append(p)
        cnames = {p["name"] for p in params if p["kind"] == "constexpr"}
        helpers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in fns}
        # a test on constexprs and module constants is decided at compile time
        calls = constructs_of(fn, alias, cnames | set(module_consts), helpers, tree)
        # the manifest describes exactly the kernel's parameters
        pnames = {a.arg for a in fn.args.args}
        for section, what in (("arrays", "array"), ("scalars", "scalar")):
            for extra in kman.get(section, {}):
                if extra not in pnames:
                    mismatch(kname, f"{what} {extra}", mline(["kernels", kname, section, extra]),
                             f"the manifest lists {what} '{extra}' but {kname} has no such parameter "
                             f"(it has {', '.join(a.arg for a in fn.args.args)}); remove it or spell it "
                             f"as kernel.py does")
        for b in kman.get("bind", {}):
            kinds = {p["name"]: p["kind"] for p in params}
            if b not in kinds:
                mismatch(kname, f"bind {b}", mline(["kernels", kname, "bind", b]),
                         f"the manifest binds '{b}' but {kname} has no such parameter (it has "
                         f"{', '.join(kinds)}); bind only its array and scalar parameters")
            elif kinds[b] == "constexpr":
                mismatch(kname, f"bind {b}", mline(["kernels", kname, "bind", b]),
                         f"{b} is a constexpr of {kname}: its value comes from {src_words}, not from "
                         f"bind; remove it from bind")
        if src_key[0] == "kernels":      # this kernel's own configs: each must be its constexpr
            for name in cfg_keys:
                if name not in cnames:
                    mismatch(kname, f"constexpr {name}", mline(_first_value_path(man, src_key, name)),
                             f"{src_words} sets {name} but {kname} takes no `{name}: ct.Constant[...]` "
                             f"parameter (its constexprs: {', '.join(sorted(cnames)) or 'none'}); remove "
                             f"{name} or spell it as kernel.py does")
        # tile dimensions must be powers of two (cuTile's rule); check the constexprs used there
        for name in sorted(tile_dim_constexprs(fn, alias) & cnames):
            for v in kvs:
                x = v.constexprs.get(name)
                if isinstance(x, int) and not isinstance(x, bool) and (x < 1 or x & (x - 1)):
                    mismatch(kname, f"constexpr {name}={x}", mline(_first_value_path(man, src_key, name, x)),
                             f"{name} sets a tile dimension in {kname}, and tile dimensions must be "
                             f"positive powers of two; write a power of two such as "
                             f"{1 << max(0, (x - 1).bit_length()) if x >= 1 else 1}")
                    break
        uses = array_uses(fn, alias, {p["name"] for p in params if p["kind"] == "array"}, tree)
        for p in params:
            if p["kind"] == "array" and "role" in p:
                _role_check(p, uses.get(p["name"], {}), kname, mline, mismatch)
        tensors = tp_manifest.kernel_tensors(man, kname) or {}
        for p in params:
            if (p["kind"] == "array" and not p.get("list") and p["name"] not in kman.get("bind", {})
                    and unit_array(fn, alias, p["name"], p.get("ndim"),
                                   (tensors.get(p["name"]) or {}).get("shape"))):
                p["static_shape"] = [1]
        variants = [{"id": v.id, "dtype": v.dtype, "constexprs": v.constexprs,
                     "arrays": {p["name"]: tp_manifest.resolve_dtype(p["dtype"], v.dtype)
                                for p in params if p["kind"] == "array" and "dtype" in p},
                     **({"compiler_hints": v.hints} if v.hints else {})}
                    for v in kvs]
        kernels.append(KernelModel(kname, fn, params, cfg_keys, variants, calls, kman["grid"]))
    # every constexpr the operator's configs set must be a constexpr parameter of some kernel
    shared = [k for k in man["kernels"] if tp_manifest.variant_source(man, k)[0] != "kernels"]
    if shared:
        src_key = tp_manifest.variant_source(man, shared[0])
        used = {p["name"] for k in kernels if k.name in shared for p in k.params if p["kind"] == "constexpr"}
        for name in tp_manifest.constexpr_names(man, shared[0]):
            if kernels and name not in used:
                mismatch(None, f"constexpr {name}", mline(_first_value_path(man, src_key, name)),
                         f"the configs set {name} but no kernel takes a `{name}: ct.Constant[...]` "
                         f"parameter; remove {name} or spell it as kernel.py does")
    return OperatorModel(man["op"], op_dir, man, str(kpath), tree, alias, kernels, findings)


def _first_value_path(man: dict, src_key: list, name: str, value=None) -> list:
    """Key path of the first entry of the variant list ``src_key`` that sets ``name`` (to
    ``value`` when given), for its line."""
    node = man
    for k in src_key:
        node = node.get(k, {}) if isinstance(node, dict) else {}
    for i, entry in enumerate(node if isinstance(node, list) else []):
        cfg = entry.get("constexprs", {}) if src_key[-1] == "variants" else entry
        if name in cfg and (value is None or cfg[name] == value):
            return src_key + ([i, "constexprs", name] if src_key[-1] == "variants" else [i, name])
    return src_key


def _scalar_param(p, detail, kman, kname, a, mline, mismatch) -> None:
    """Resolve a runtime scalar's type from its annotation and ``kernels/<k>/scalars``."""
    declared = kman.get("scalars", {}).get(a.arg)
    ann = {"f32": "`float`", "i32": "`int`", "i64": "`ct.ScalarInt64`"}.get(detail)
    t = declared or detail
    if detail is not None and declared is not None and declared != detail:
        mismatch(kname, f"scalar {a.arg}", mline(["kernels", kname, "scalars", a.arg]),
                 f"the manifest says {declared}, but kernel.py:{a.lineno} annotates {a.arg} as {ann}, "
                 f"which launches as {detail}; write {a.arg}: {detail}")
        t = detail
    if detail is None and declared == "i64":
        mismatch(kname, f"scalar {a.arg}", mline(["kernels", kname, "scalars", a.arg]),
                 f"{a.arg} is unannotated in kernel.py:{a.lineno}: ct.launch passes a Python int as "
                 f"int32 unless the parameter is annotated ct.ScalarInt64; write {a.arg}: i32")
    p.update(kind=f"scalar_{t}", dtype=t, annotated=detail is not None)


def _constexpr_param(ctype, kvs, cfg_keys, kname, a, man, src_key, src_words, mline, mismatch):
    """Check a constexpr's values over the kernel's variants against its annotation."""
    if ctype not in ("int", "float", "bool"):
        mismatch(kname, f"constexpr {a.arg}", mline(["kernels", kname]),
                 f"{a.arg} is a ct.Constant[{ctype}] (kernel.py:{a.lineno}): manifest constexpr values "
                 f"are ints, floats and bools only (no words for this type)", owner="tool",
                 kind="undescribable")
        return
    if a.arg not in cfg_keys:
        example = {"int": "64", "float": "1.0", "bool": "true"}[ctype]
        mismatch(kname, f"constexpr {a.arg}", mline(src_key),
                 f"{kname}'s ct.Constant[{ctype}] parameter {a.arg} (kernel.py:{a.lineno}) has no value in "
                 f"{src_words}; add {a.arg}: {example} (its launch value) to every entry there", file=None)
        return
    ok = {"int": lambda x: isinstance(x, int) and not isinstance(x, bool),
          "float": lambda x: isinstance(x, float),
          "bool": lambda x: isinstance(x, bool)}[ctype]
    bad = [v.constexprs[a.arg] for v in kvs if not ok(v.constexprs[a.arg])]
    if bad:
        x = bad[0]
        fix = {"int": f"an int such as {int(x) if isinstance(x, (int, float)) else 1}",
               "float": f"a float with a dot such as {float(x) if isinstance(x, (int, float)) else 1.0}",
               "bool": "true or false"}[ctype]
        mismatch(kname, f"constexpr {a.arg}", mline(_first_value_path(man, src_key, a.arg, x)),
                 f"{a.arg} is declared ct.Constant[{ctype}] (kernel.py:{a.lineno}) but {src_words} gives "
                 f"{', '.join(map(repr, dict.fromkeys(bad)))}, which cuTile would compile as another type; "
                 f"write {fix}")


_READS = {"load", "gather", "load_advanced_indexing"}
_WRITES = {"store", "scatter"}
# Array methods returning a view of the same memory, and the tiled-view methods that touch it
# (cuda-tile 1.7.0 ``Array.slice``/``Array.tiled_view``, ``TiledView.load/store/atomic_store_add``)
_VIEWS = {"slice", "tiled_view"}
_VIEW_USES = {"load": "read", "store": "write", "atomic_store_add": "atomic"}


def array_uses(fn: ast.FunctionDef, alias: str, arrays: set[str], module: ast.Module | None = None,
               _depth: int = 0) -> dict[str, dict[str, list]]:
    """How a kernel touches each array parameter: ``{name: {"read": [lines], "write": [lines],
    "atomic": [lines], "unknown": [lines]}}`` from ``ct.load``/``ct.gather`` (read),
    ``ct.store``/``ct.scatter`` (write) and ``ct.atomic_*`` (read-modify-write), and from the
    tiled-view methods ``load``/``store``/``atomic_store_add``, following local names bound to an
    array, to an element of a list of arrays (``a = As[g]``) or to a view of an array's memory
    (``a = x.slice(axis=0, start=s, stop=e)``, ``x.tiled_view(shape)``: cuda-tile 1.7.0's
    ``Array.slice``/``Array.tiled_view``), and helper functions of the same ``module`` the array
    is passed to (their uses count at the call's line); an array passed to a function this module
    does not define is ``unknown``."""
    alias_of: dict[str, str] = {}
    helpers = {n.name: n for n in (module.body if module else []) if isinstance(n, ast.FunctionDef)}

    def base(node) -> str | None:
        while True:
            if isinstance(node, ast.Subscript):
                node = node.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in _VIEWS):
                node = node.func.value
            else:
                break
        if isinstance(node, ast.Name):
            return node.id if node.id in arrays else alias_of.get(node.id)
        return None

    stmts = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Assign)), key=lambda n: n.lineno)
    for n in stmts:
        b = base(n.value) if isinstance(n.value, (ast.Name, ast.Subscript, ast.Call)) else None
        if b:
            for t in n.targets:
                if isinstance(t, ast.Name):
                    alias_of[t.id] = b
    out: dict[str, dict[str, list]] = {}
    for n in ast.walk(fn):
        if not isinstance(n, ast.Call):
            continue
        if is_ct(n.func, alias):
            if not n.args:
                continue
            name = n.func.attr
            how = ("read" if name in _READS else "write" if name in _WRITES
                   else "atomic" if name.startswith("atomic_") else None)
            b = base(n.args[0]) if how else None
            if b:
                out.setdefault(b, {}).setdefault(how, []).append(n.lineno)
            continue
        if isinstance(n.func, ast.Attribute) and n.func.attr in _VIEW_USES and base(n.func.value):
            out.setdefault(base(n.func.value), {}).setdefault(_VIEW_USES[n.func.attr], []).append(n.lineno)
            continue
        passed = [(i, a) for i, a in enumerate(n.args) if base(a)] + \
                 [(k.arg, k.value) for k in n.keywords if k.arg and base(k.value)]
        if not passed:
            continue
        callee = helpers.get(n.func.id) if isinstance(n.func, ast.Name) else None
        if callee is None or _depth >= 4:
            for _, a in passed:
                out.setdefault(base(a), {}).setdefault("unknown", []).append(n.lineno)
            continue
        names = [a.arg for a in callee.args.args]
        inner_of = {(names[i] if isinstance(i, int) and i < len(names) else i): base(a) for i, a in passed}
        inner = array_uses(callee, alias, set(inner_of), module, _depth + 1)
        for pname, use in inner.items():
            for how, lines in use.items():
                out.setdefault(inner_of[pname], {}).setdefault(how, []).extend([n.lineno] * len(lines))
    return out


def unit_array(fn: ast.FunctionDef, alias: str, name: str, ndim: int | None, shape) -> bool:
    """Whether array parameter ``name`` of kernel ``fn`` is a one-element array that both JITs
    compile with a constant shape ``[1]``.

    cuTile Python's launcher compiles every dimension of extent 1 as a constant (cuda-tile 1.7.0:
    the kernel signature's ``shape_constant``, made from the launch's arrays); cutile compiles a
    ``&Tensor<E, {[-1]}>`` with a run-time extent, so a ``ct.load(Start_q, index=(0,),
    shape=(1,))`` of a ``[1]`` array becomes a predicated load there (tg_attention_sink
    BANDWIDTH64/128 on the H200: 0.960-0.975, more spills in the main loop). A constant shape
    needs the extent fixed for every launch, so only a rank-1 array whose manifest ``tensors``
    shape is the literal ``[1]`` qualifies, and only when the kernel touches it solely as the
    array of ``ct.load`` / ``ct.store`` (partition views; no gather / scatter / atomics, no
    ``.shape``, not passed on): cutile 0.5.0 panics on pointer tiles of a constant-shape tensor
    (compile_intrinsic.rs) and types the strides of such a tensor with its constant shape.
    """
    if ndim != 1 or not isinstance(shape, list) or shape != [1] or isinstance(shape[0], bool):
        return False
    as_view = set()
    for n in ast.walk(fn):
        if (isinstance(n, ast.Call) and is_ct(n.func, alias) and n.func.attr in ("load", "store")
                and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == name):
            as_view.add(id(n.args[0]))
    named = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]
    return bool(as_view) and all(id(n) in as_view for n in named)


def _role_check(p: dict, use: dict, kname: str, mline, mismatch) -> None:
    if use.get("unknown"):
        return                  # passed to a function defined elsewhere: no conclusion
    reads, writes, atomic = use.get("read", []), use.get("write", []), use.get("atomic", [])
    want = p["role"]
    if atomic:
        ok = want in ("output", "inout") if not reads else want == "inout"
        got = "inout" if reads else "output or inout"
    else:
        got = "inout" if reads and writes else "output" if writes else "input"
        ok = want == got
    if ok:
        return
    did = []
    if writes:
        did.append(f"writes it (line {', '.join(map(str, sorted(set(writes))))})")
    if atomic:
        did.append(f"updates it atomically (line {', '.join(map(str, sorted(set(atomic))))})")
    if reads:
        did.append(f"reads it (line {', '.join(map(str, sorted(set(reads))))})")
    how = " and ".join(did) if did else "never writes it"
    if writes and not reads and not atomic:
        how += " and never reads it"
    mismatch(kname, f"parameter {p['name']}", mline(["kernels", kname, "arrays", p["name"], "role"]),
             f"the manifest says role '{want}' but {kname} {how}; write role: {got.split(' or ')[0]}")


def load_once(op_dir: str | Path) -> OperatorModel:
    """:func:`load` of ``op_dir``, read once per process while its files (the operator folder's,
    the imported kernel.py and its import verdict) keep their size and mtime: a job handles every
    variant of a kernel, and each load parsed the manifest anew (1.4 s for tg_attention's,
    measured with cProfile). Raises as :func:`load`; the caller must not modify the model."""
    d = Path(op_dir).resolve()
    kpy = source.kernel_py(d)
    files = [f for f in sorted(d.iterdir()) if f.is_file()] if d.is_dir() else []
    files += [kpy, kpy.parent / source.VERDICT_NAME]
    stamp = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files if f.is_file())
    return _load_cached(d, stamp)


@functools.lru_cache(maxsize=8)
def _load_cached(op_dir: Path, stamp: tuple) -> OperatorModel:
    return load(op_dir)
