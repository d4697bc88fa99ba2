"""Module-level compile-time constants of a cuTile Python kernel module, read from its AST.

cuTile Python reads a module-level name bound once to a literal (``EPS = 1e-6``, ``-math.inf``,
``1.0 / math.log(2)``) or to a member of a cuda.tile enum (``PAD = ct.PaddingMode.ZERO``) as a
compile-time constant inside a kernel. The frontend (what a kernel may use) and the translator
(what it emits) both read them here, so both read them the same way.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from tileport.model import constructs


def is_ct(node: ast.AST, alias: str, attr: str | None = None) -> bool:
    """Whether ``node`` is ``<alias>.<attr>`` (any attribute of the cuda.tile alias when ``attr``
    is None)."""
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == alias and (attr is None or node.attr == attr))


@dataclass(frozen=True)
class Member:
    """A member of a cuda.tile enum passed around as a value (``zero_pad = ct.PaddingMode.ZERO``,
    a module-level ``PAD_ZERO = ct.PaddingMode.ZERO``): cuTile Python reads it at compile time."""

    enum: str
    name: str

    def __repr__(self) -> str:
        return f"{self.enum}.{self.name}"


# cuda.tile enums a kernel passes as compile-time values (padding_mode=, rounding_mode=,
# memory_order=, memory_scope=), directly, through an imported enum or a name bound to a
# member -> their members the translator has a rule for (cuda/tile/_stub.py, _memory_model.py)
ENUMS = {"PaddingMode": frozenset(constructs.PADDING), "RoundingMode": frozenset(constructs.ROUNDING),
         "MemoryOrder": frozenset(constructs.MEMORY_ORDER), "MemoryScope": frozenset(constructs.MEMORY_SCOPE)}


# the cuda.tile module that defines each enum (cuda-tile 1.7.0: ``cuda/tile/__init__.py`` re-exports
# them from these): ``from cuda.tile._numeric_semantics import RoundingMode`` binds the same class.
# Only these: another module's enum of the same name is another class
# (``cuda.tile._bytecode.encodings.RoundingMode``). tests/test_constructs.py checks the table
# against the installed cuda.tile.
ENUM_MODULES = {"PaddingMode": "cuda.tile._numeric_semantics", "RoundingMode": "cuda.tile._numeric_semantics",
                "MemoryOrder": "cuda.tile._memory_model", "MemoryScope": "cuda.tile._memory_model"}


def enum_imports(tree: ast.Module) -> dict:
    """``from cuda.tile import RoundingMode as RMd`` -> {'RMd': 'RoundingMode'}; also from the
    module that defines the enum (``from cuda.tile._numeric_semantics import RoundingMode as RM``,
    :data:`ENUM_MODULES`)."""
    return {a.asname or a.name: a.name for n in tree.body if isinstance(n, ast.ImportFrom)
            for a in n.names if a.name in ENUMS and n.module in ("cuda.tile", ENUM_MODULES[a.name])}


def enum_member(node, alias: str, imports: dict | None = None) -> Member | None:
    """``<alias>.PaddingMode.ZERO`` / ``RMd.APPROX`` (an enum imported from cuda.tile, as
    :func:`enum_imports` lists them) as a :class:`Member` (None for anything else, and for a
    member without a rule)."""
    if not isinstance(node, ast.Attribute):
        return None
    base = node.value
    if isinstance(base, ast.Attribute) and is_ct(base, alias) and base.attr in ENUMS:
        enum = base.attr
    elif isinstance(base, ast.Name) and base.id in (imports or {}):
        enum = imports[base.id]
    else:
        return None
    return Member(enum, node.attr) if node.attr in ENUMS[enum] else None


# names of Python's math module a kernel may read as constants (cuTile Python folds them)
MATH_CONSTANTS = {"inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e, "tau": math.tau}
# numpy's float constants (numpy 2: Python floats, the values of math's); numpy 2 removed the
# aliases np.Inf / np.NaN / np.PINF, so only these names are read
NUMPY_CONSTANTS = {"inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e,
                   "euler_gamma": 0.5772156649015329}


def module_constants(tree: ast.Module, alias: str = "ct") -> dict:
    """Module-level names bound once to a literal (int, float, bool; ``-x``, ``math.inf``,
    ``-np.inf``...) or to a member of a cuda.tile enum (``PAD_ZERO = ct.PaddingMode.ZERO``: a
    :class:`Member`):
    cuTile Python reads them as compile-time constants inside a kernel. A name bound twice,
    or to anything else, is left out (its value is not known without running the module)."""
    maths = {a.asname or a.name for n in tree.body if isinstance(n, ast.Import)
             for a in n.names if a.name == "math"}
    numpys = {a.asname or a.name for n in tree.body if isinstance(n, ast.Import)
              for a in n.names if a.name == "numpy"}
    imports = enum_imports(tree)
    seen: dict = {}
    for n in tree.body:
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, ast.AnnAssign) and n.value is not None else []
        for t in targets:
            if isinstance(t, ast.Name):
                seen[t.id] = seen.get(t.id, 0) + 1
    out = {}
    for n in tree.body:
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            t = n.targets[0] if isinstance(n, ast.Assign) else n.target
            if not isinstance(t, ast.Name) or seen.get(t.id) != 1 or (
                    isinstance(n, ast.Assign) and len(n.targets) != 1):
                continue
            v = _literal(n.value, maths, numpys)
            if isinstance(v, (int, float)):
                out[t.id] = v
            elif enum_member(n.value, alias, imports) is not None:
                out[t.id] = enum_member(n.value, alias, imports)
    return out


def _literal(node, maths: set, numpys: frozenset = frozenset()):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand, maths, numpys)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in maths and node.attr in MATH_CONSTANTS):
        return MATH_CONSTANTS[node.attr]
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in numpys and node.attr in NUMPY_CONSTANTS):
        return NUMPY_CONSTANTS[node.attr]
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLD:
        a, b = _literal(node.left, maths, numpys), _literal(node.right, maths, numpys)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            try:
                return _FOLD[type(node.op)](a, b)
            except (ArithmeticError, ValueError):
                return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id in maths
            and node.func.attr in MATH_FUNCTIONS and not node.keywords):
        args = [_literal(a, maths, numpys) for a in node.args]
        if all(isinstance(a, (int, float)) for a in args):
            try:
                return getattr(math, node.func.attr)(*args)
            except (ArithmeticError, ValueError, TypeError):
                return None
    return None


# Python arithmetic a module constant may be written with (``1.0 / math.log(2)``), folded in
# double precision as Python evaluates it when the module is imported
_FOLD = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
         ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
         ast.Pow: lambda a, b: a ** b}


MATH_FUNCTIONS = {"log", "log2", "log10", "sqrt", "exp", "pow"}
