"""torch inside an imported kernel: the two uses cuTile compiles like its own spelling, and the rest.

TileGym writes its kernels next to torch wrappers, and some name torch inside a kernel:
``x: torch.Tensor`` parameter annotations (mamba2's kernels and helpers), ``torch.int32`` /
``torch.float32`` as a ``dtype`` (silu_and_mul's row-wise kernels). ``kernel.py`` never imports
torch (tileport's CPU side has none), so the importer (:mod:`tileport.cpu.importer`) rewrites exactly
two uses, each because cuda-tile 1.7.0 compiles both spellings to the same Tile IR, and reports
every rewrite as an ``info`` finding with the original text, its line and this evidence:

* **a ``torch.Tensor`` annotation of a function parameter is dropped** (``x: torch.Tensor,`` ->
  ``x,``). cuTile reads a kernel's parameter annotations in
  ``cuda/tile/_annotated_function.py::_build_annotation_node``: only ``typing.Annotated[...]``
  metadata (``ct.Constant[...]``, ``ct.ScalarInt64``, ``ct.IndexedWithInt64``, list annotations)
  and ``tuple[...]`` mean anything; every other annotation -- ``torch.Tensor`` as much as none at
  all (``inspect.Parameter.empty``) -- gives ``LeafAnnotationNode(constant=False)``, so the
  parameter's kind comes from its argument (``_compile.py::_create_parameter``). A helper's
  annotations are never read: ``_passes/ast2hir.py`` takes parameter names from the ``def``
  (``_get_all_parameters``) and ``_passes/hir2ir.py::_bind_args`` binds arguments with
  ``inspect.Signature.bind`` (names, kinds, defaults).
* **``torch.<dtype>`` inside the body of a function only cuTile runs becomes ``ct.<dtype>``** for
  the 16 names of :data:`TORCH_DTYPES`. In a kernel body ``torch.int32`` is a module attribute:
  ``_ir/core_ops.py::getattr_module_impl`` passes the object to ``sym2var`` ->
  ``loosely_typed_const``, whose ``type_of_constant_python_value`` (``_ir/typing_support.py``)
  classifies it as ``ConstantKind.ForeignDType`` and maps it with
  ``_cext.foreign_dtype_object_to_native`` to a cuTile dtype; ``loosely_typed_const`` then
  replaces the value by that dtype ("Normalize third party dtype spec objects"), so the constant
  is the one ``ct.int32`` gives (same ``DTypeSpec``, cached per dtype by ``_get_dtype_spec``, same
  value). The map is cuTile's registry of foreign dtypes (``cext/tile_kernel.cpp``
  ``foreign_dtype_table`` / ``register_torch_dtypes`` in NVIDIA/cutile-python, compiled into
  ``cuda/tile/_cext*.so``): it imports ``torch`` and reads exactly these attribute names, one
  cuTile dtype each. ``tests/test_importer.py`` checks the table against the installed cuTile's
  own registry and compiles an original and a rewritten kernel to the same Tile IR.

Only where cuTile, not Python, evaluates the text: a module-level statement, a decorator, a
default, a return annotation, and the arguments of ``static_eval`` / ``static_assert`` /
``static_iter`` / ``static_exception`` (and ``raise``) run as Python, where ``torch.int32`` is
torch's own object; a plain helper that Python may also run (see the importer) is not rewritten
either. Any other use of torch -- another attribute (``torch.half``: an alias cuTile's registry
does not read by name), the module object itself, ``torch.Tensor`` anywhere but a parameter
annotation -- is a :class:`Refusal`: the import is BLOCKED (owner ``tool``) naming it and its line.

A rewrite keeps the columns of everything after it on its line (the replacement is padded with
spaces when an expression or parameter follows it there), so cuTile's debug locations (line,
column) in the reference Tile IR map one to one onto the wheel's text through the line map.
"""
from __future__ import annotations

import ast
import linecache
import symtable
from dataclasses import dataclass

# torch's attribute -> the cuTile dtype cuTile's foreign-dtype registry maps it to (cuda-tile
# 1.7.0; cext/tile_kernel.cpp foreign_dtype_table, the entries marked for torch). Aliases such as
# torch.half or torch.long are the same objects in torch, but the registry reads these names.
TORCH_DTYPES = {
    "bool": "bool_",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "float16": "float16", "float32": "float32", "float64": "float64", "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "float8_e8m0fnu": "float8_e8m0fnu",
}

# numpy's dtype types -> the cuTile dtype cuTile's foreign-dtype registry maps them to (cuda-tile
# 1.7.0: _cext.classify_constant gives ConstantKind.ForeignDType and
# foreign_dtype_object_to_native the dtype of the same name for each, checked against the
# installed cuTile by tests/test_foreign_dtypes.py). cupy's dtype attributes are numpy's own types
# (cupy/__init__.py: ``from numpy import float32``, ...), so ``cp.float32`` is ``np.float32``.
NUMPY_DTYPES = {n: n for n in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                               "uint64", "float16", "float32", "float64")}
#: modules whose dtype attributes a plain kernel.py may name inside a cuTile-only body
FOREIGN_DTYPE_MODULES = {"torch": TORCH_DTYPES, "numpy": NUMPY_DTYPES, "cupy": NUMPY_DTYPES}

# calls whose arguments cuTile evaluates as Python (cuda/tile/_passes/ast2hir.py:
# _KEYWORD_LIKE_FUNC_NAMES, _call_static_eval); a `raise` is evaluated like static_exception
STATIC_EVAL_CALLS = frozenset({"static_eval", "static_assert", "static_iter", "static_exception"})

ANNOTATION_EVIDENCE = (
    "cuda-tile 1.7.0 ignores it: cuda/tile/_annotated_function.py:_build_annotation_node gives any "
    "annotation other than typing.Annotated[...] (ct.Constant, ct.ScalarInt64, ct.IndexedWithInt64, "
    "list annotations) or tuple[...] the node of an unannotated parameter, "
    "LeafAnnotationNode(constant=False), so the parameter's kind comes from its argument "
    "(_compile.py:_create_parameter); a helper's annotations are not read at all "
    "(_passes/ast2hir.py:_get_all_parameters takes names, _passes/hir2ir.py:_bind_args binds with "
    "inspect.Signature)")
DTYPE_EVIDENCE = (
    "cuda-tile 1.7.0 compiles both alike: a module attribute in a kernel becomes a constant through "
    "_ir/core_ops.py:getattr_module_impl -> sym2var -> loosely_typed_const, where "
    "_ir/typing_support.py:type_of_constant_python_value classifies a torch dtype as "
    "ConstantKind.ForeignDType, _cext.foreign_dtype_object_to_native maps it to the cuTile dtype "
    "of the same name (torch.bool -> bool_; registry cext/tile_kernel.cpp foreign_dtype_table) and "
    "the value is replaced by that dtype ('Normalize third party dtype spec objects')")


@dataclass
class Rewrite:
    """One use of torch replaced in ``kernel.py``: on module line ``line``, the bytes
    ``[col, end_col)`` (UTF-8 offsets, as :mod:`ast` counts them) become ``replacement``."""

    kind: str               # "annotation" (dropped) | "dtype" (torch.X -> ct.X)
    function: str           # the top-level function it is in
    line: int               # module line, 1-based
    col: int
    end_col: int
    original: str           # ": torch.Tensor", "torch.int32"
    replacement: str        # "", "ct.int32" (plus the spaces that keep later columns)
    keeps_columns: bool     # False when the replacement is longer than the original

    @property
    def evidence(self) -> str:
        return ANNOTATION_EVIDENCE if self.kind == "annotation" else DTYPE_EVIDENCE

    @property
    def shown(self) -> str:
        """``'torch.int32' -> 'ct.int32'`` / ``': torch.Tensor' dropped``."""
        if self.kind == "annotation":
            return f"'{self.original}' dropped"
        return f"'{self.original}' -> '{self.replacement.rstrip()}'"


@dataclass
class Refusal:
    """A use of torch that stays BLOCKED: module line, the text and why."""

    line: int
    text: str
    reason: str


def _parents(stmt: ast.AST) -> dict[int, ast.AST]:
    out = {}
    for node in ast.walk(stmt):
        for child in ast.iter_child_nodes(node):
            out[id(child)] = node
    return out


def _call_name(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def python_positions(stmt: ast.stmt) -> dict[int, str]:
    """Nodes of a top-level ``stmt`` that Python evaluates rather than cuTile compiles:
    ``{id(node): why}``. For a function: its decorators, defaults, annotations and return
    annotation, and inside its body the arguments of the static-eval calls and ``raise``; for
    any other statement, all of it."""
    out: dict[int, str] = {}

    def mark(node, why):
        if node is not None:
            for n in ast.walk(node):
                out.setdefault(id(n), why)

    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        mark(stmt, "a module-level statement, which Python runs when kernel.py is imported")
        return out
    for d in stmt.decorator_list:
        mark(d, "a decorator, which Python evaluates when the function is defined")
    a = stmt.args
    for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
        mark(d, "a default value, which Python evaluates when the function is defined")
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
        mark(arg.annotation, "an annotation, which Python evaluates when the function is defined")
    mark(stmt.returns, "a return annotation, which Python evaluates when the function is defined")
    for node in ast.walk(ast.Module(body=stmt.body, type_ignores=[])):
        if isinstance(node, ast.Call) and _call_name(node) in STATIC_EVAL_CALLS:
            for x in node.args + [k.value for k in node.keywords]:
                mark(x, f"an argument of {_call_name(node)}(), which cuTile evaluates as Python")
        elif isinstance(node, ast.Raise):
            mark(node.exc, "a raised exception, which cuTile evaluates as Python (static_exception)")
    return out


def _local_in(stmt_src: str, name: str) -> str | None:
    """The scope of ``stmt_src`` (a top-level statement's text) where ``name`` is a local or a
    parameter, or None when every scope reads the module's ``name``."""
    def walk(t):
        for child in t.get_children():
            try:
                s = child.lookup(name)
                if s.is_local() or s.is_parameter():
                    return child.get_name()
            except KeyError:
                pass
            hit = walk(child)
            if hit:
                return hit
        return None
    return walk(symtable.symtable(stmt_src, "<stmt>", "exec"))


def _starts(stmt: ast.stmt) -> list[tuple[int, int]]:
    """(line, column) where each node inside ``stmt`` starts (what cuTile may record as a
    location)."""
    return [(n.lineno, n.col_offset) for n in ast.walk(stmt)
            if n is not stmt and hasattr(n, "lineno") and hasattr(n, "col_offset")]


def plan(stmt: ast.stmt, lines: list[str], torch: set[str], cutile: str | None,
         dtypes: dict[str, str] | None = None) -> tuple[list[Rewrite], list[Refusal]]:
    """The rewrites and refusals for every use of a torch-bound name in the top-level ``stmt``
    of a module whose text is ``lines``.

    ``torch``: the module's names bound by ``import torch`` (``{"torch"}``); ``cutile``: how the
    module spells ``cuda.tile`` (``"ct"``), None when it binds no name to it. Whether the
    function's body is run by cuTile only is the caller's to check (a dtype rewrite needs it).
    ``dtypes``: the module's attribute -> cuTile dtype table (:data:`TORCH_DTYPES` by default;
    :data:`NUMPY_DTYPES` for numpy and cupy)."""
    dtypes = TORCH_DTYPES if dtypes is None else dtypes
    parents = _parents(stmt)
    py = python_positions(stmt)
    fname = getattr(stmt, "name", "")
    ann_of, in_ann = {}, {}        # annotation node -> its parameter; any node inside one -> same
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for node in ast.walk(stmt):
            if isinstance(node, ast.arg) and node.annotation is not None:
                ann_of[id(node.annotation)] = node
                in_ann.update((id(n), node) for n in ast.walk(node.annotation))
    first = min([d.lineno for d in getattr(stmt, "decorator_list", [])] + [stmt.lineno])
    src = "\n".join(lines[first - 1:stmt.end_lineno])
    starts = _starts(stmt)
    shadow = None
    if cutile is not None:
        shadow = _local_in(src, cutile.split(".")[0])
    rewrites: list[Rewrite] = []
    refusals: list[Refusal] = []

    def span_text(line, c0, c1):
        return lines[line - 1].encode()[c0:c1].decode()

    def rewrite(kind, line, c0, c1, repl):
        original = span_text(line, c0, c1)
        followed = any(ln == line and c >= c1 for ln, c in starts)
        if followed and len(repl) < len(original.encode()):
            repl += " " * (len(original.encode()) - len(repl))
        rewrites.append(Rewrite(kind, fname, line, c0, c1, original, repl,
                                not followed or len(repl) == len(original.encode())))

    for node in ast.walk(stmt):
        if not (isinstance(node, ast.Name) and node.id in torch and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if not (isinstance(parent, ast.Attribute) and parent.value is node):
            refusals.append(Refusal(node.lineno, node.id,
                                    "the kernel uses the module object torch itself, not one of its dtypes"))
            continue
        text = f"{node.id}.{parent.attr}"
        arg = ann_of.get(id(parent))
        if arg is not None and parent.attr == "Tensor" and parent.end_lineno == arg.lineno:
            c0 = arg.col_offset + len(arg.arg.encode())
            rewrite("annotation", arg.lineno, c0, parent.end_col_offset, "")
        elif id(parent) in in_ann:
            arg = in_ann[id(parent)]
            refusals.append(Refusal(node.lineno, text, f"annotation {ast.unparse(arg.annotation)} of "
                                    f"parameter '{arg.arg}': tileport drops only an annotation that is "
                                    f"exactly torch.Tensor on the parameter's line (cuTile reads "
                                    f"Annotated[...] and tuple[...] annotations itself)"))
        elif id(parent) in py:
            refusals.append(Refusal(node.lineno, text, f"{text} is in {py[id(parent)]}; there it is "
                                    f"torch's own object, which kernel.py cannot have"))
        elif parent.attr not in dtypes or not isinstance(parent.ctx, ast.Load):
            label = "torch" if dtypes is TORCH_DTYPES else node.id
            refusals.append(Refusal(node.lineno, text, f"{text} is not one of the {label} dtypes that "
                                    f"cuTile maps to its own ({', '.join(sorted(dtypes))})"))
        elif cutile is None:
            refusals.append(Refusal(node.lineno, text, f"{text} could become cuTile's own dtype, but "
                                    f"the module binds no name to cuda.tile to spell it with"))
        elif shadow is not None:
            refusals.append(Refusal(node.lineno, text, f"{text} could become "
                                    f"{cutile}.{dtypes[parent.attr]}, but '{cutile.split('.')[0]}' "
                                    f"is a local name in '{shadow}'"))
        elif parent.lineno != parent.end_lineno:
            refusals.append(Refusal(node.lineno, text, f"{text} spans lines"))
        else:
            rewrite("dtype", parent.lineno, parent.col_offset, parent.end_col_offset,
                    f"{cutile}.{dtypes[parent.attr]}")
    return sorted(rewrites, key=lambda r: (r.line, r.col)), refusals


def apply(text: str, rewrites: list[Rewrite]) -> str:
    """One module line with its rewrites applied (right to left, so offsets stay valid)."""
    data = text.encode()
    for r in sorted(rewrites, key=lambda r: r.col, reverse=True):
        data = data[:r.col] + r.replacement.encode() + data[r.end_col:]
    return data.decode()


def _cutile_only(stmt: ast.stmt, cutile: str) -> bool:
    """Is the top-level ``stmt`` a function whose body only cuTile runs (``@ct.kernel`` or
    ``@ct.function``, with or without arguments)?"""
    if not isinstance(stmt, ast.FunctionDef):
        return False
    for d in stmt.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        if isinstance(f, ast.Attribute) and f.attr in ("kernel", "function") and ast.unparse(f.value) == cutile:
            return True
    return False


def plain_kernel_text(text: str) -> tuple[str, list[Rewrite]]:
    """``operators/<op>/kernel.py`` as cuTile compiles it (issue 34 item 2 a): the dtype
    attributes of torch, cupy and numpy (:data:`FOREIGN_DTYPE_MODULES`) that a ``@ct.kernel`` /
    ``@ct.function`` body names become ``ct.<dtype>``, as :func:`plan` rewrites a wheel's kernels
    (same evidence: cuTile maps them to its own dtypes), and a module-level ``import torch`` /
    ``import cupy as cp`` whose names nothing else reads any more is blanked, so that kernel.py
    loads without torch or cupy on the CPU side. Lines keep their numbers and, where something
    follows a rewrite, their columns. Returns (text, rewrites); the text unchanged and no
    rewrites when there is nothing to rewrite, cuda.tile is not imported under a plain name, the
    text does not parse, or a use of such a module in a cuTile body would stay (:class:`Refusal`:
    the caller's errors then name it as before)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text, []
    cutile = next((a.asname or a.name for st in tree.body if isinstance(st, ast.Import)
                   for a in st.names if a.name == "cuda.tile"), None)
    foreign: dict[str, str] = {}        # bound name -> module
    for st in tree.body:
        if isinstance(st, ast.Import):
            for a in st.names:
                if a.name in FOREIGN_DTYPE_MODULES:
                    foreign[a.asname or a.name] = a.name
    if cutile is None or "." in cutile or not foreign:
        return text, []
    lines = text.splitlines()
    rewrites: list[Rewrite] = []
    for st in tree.body:
        if not _cutile_only(st, cutile):
            continue
        for name, module in foreign.items():
            rw, refused = plan(st, lines, {name}, cutile, FOREIGN_DTYPE_MODULES[module])
            rw = [r for r in rw if r.kind == "dtype"]
            if refused or not rw:
                continue
            rewrites += rw
    if not rewrites:
        return text, []
    by_line: dict[int, list[Rewrite]] = {}
    for r in rewrites:
        by_line.setdefault(r.line, []).append(r)
    out = [apply(ln, by_line[i]) if i in by_line else ln for i, ln in enumerate(lines, 1)]
    # an import of torch / cupy that nothing reads any more is blanked (the CPU side has neither)
    new_tree = ast.parse("\n".join(out))
    read = {n.id for n in ast.walk(new_tree) if isinstance(n, ast.Name)}
    for st in tree.body:
        if (isinstance(st, ast.Import) and all(a.name in ("torch", "cupy") for a in st.names)
                and not read & {a.asname or a.name for a in st.names}):
            for i in range(st.lineno, st.end_lineno + 1):
                out[i - 1] = ""
    return "\n".join(out) + ("\n" if text.endswith("\n") else ""), sorted(rewrites, key=lambda r: (r.line, r.col))


def exec_kernel_module(mod, path) -> list[Rewrite]:
    """Run kernel.py at ``path`` into the module object ``mod`` as :func:`plain_kernel_text`
    rewrites it. cuTile reads a kernel's source through :mod:`inspect` (``findsource``, which
    asks :mod:`linecache`), so a rewritten text is entered in linecache under the file's own
    name (an entry without mtime, which ``linecache.checkcache`` keeps): cuTile parses the text
    it runs, and its debug locations keep naming kernel.py's lines. Returns the rewrites; raises
    what running the text raises."""
    path = str(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    new, rewrites = plain_kernel_text(text)
    if rewrites:
        linecache.cache[path] = (len(new), None, new.splitlines(True), path)
    exec(compile(new, path, "exec"), mod.__dict__)  # noqa: S102 - the operator's own kernel.py
    return rewrites
