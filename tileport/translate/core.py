"""Values, types and the expression walk every construct family builds on.

:class:`TranslatorBase` holds one entry's translation state (scopes of Python names, the
emitted Rust lines, temporaries) and walks an expression's AST; each cuTile call it meets is
handed to the rule named for it in ``CALLS`` (a family module's table, merged by the driver).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .. import analyze as A
from .. import constructs as C


class Unsupported(Exception):
    """A construct the translator has no rule for. ``line`` is 1-based in ``file``."""

    def __init__(self, file: str, line: int | None, construct: str, reason: str):
        super().__init__(f"{file}:{line}: {construct}: {reason}")
        self.file, self.line, self.construct, self.reason = file, line, construct, reason


@dataclass(frozen=True)
class Ty:
    """Type of a translated value.

    kind: 'tile' (dtype: Rust element type or 'E'; shape: tuple of Rust const exprs),
    'i32', 'f32' (scalars), 'lit' (a Python literal, folded), 'arr' (ndim), 'dtype'.
    """

    kind: str
    dtype: str | None = None
    shape: tuple = ()
    ndim: int = 0
    value: object = None

    def rust(self) -> str:
        if self.kind == "tile":
            return f"Tile<{self.dtype}, {{[{', '.join(self.shape)}]}}>"
        if self.kind in ("i32", "f32"):
            return self.kind
        raise TypeError(f"no Rust type for {self}")


@dataclass
class Var:
    rust: str
    ty: Ty
    decl: int | None  # index of the `let` line in the emitter, for late `mut`
    depth: int


@dataclass
class Emitter:
    lines: list = field(default_factory=list)   # [indent, text, py_line]
    indent: int = 2

    def emit(self, text: str, py_line: int | None) -> int:
        self.lines.append([self.indent, text, py_line])
        return len(self.lines) - 1


class TranslatorBase:
    """Translation state of one entry and the expression walk (see the module docstring)."""

    # cuTile function name -> name of the method translating a call of it (set by the driver)
    CALLS: dict[str, str] = {}

    def __init__(self, fn: ast.FunctionDef, params: list[dict], alias: str, file: str,
                 spec: dict | None = None, entry: str | None = None):
        self.fn, self.params, self.alias, self.file = fn, params, alias, file
        # constexpr values this entry is specialised for (static `if` tests, float/bool)
        self.spec = dict(spec or {})
        self.entry = entry or fn.name
        self.out = Emitter()
        self.scopes: list[dict[str, Var]] = [{}]
        self.tmp = 0
        self.line = fn.lineno
        self.need_pid = False
        self.need_nblk = False
        # float products that a following add/sub may contract into an fma:
        # rust value name -> (lhs, rhs, index of its `let` line, python name or None)
        self.muls: dict[str, tuple] = {}
        self.uses: dict[str, int] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.uses[n.id] = self.uses.get(n.id, 0) + 1

    # ---- helpers -------------------------------------------------------------------
    def fail(self, node, construct: str, reason: str):
        raise Unsupported(self.file, getattr(node, "lineno", self.line), construct, reason)

    def fresh(self, stem: str = "t") -> str:
        self.tmp += 1
        return f"__{stem}{self.tmp}"

    def bind(self, expr: str, ty: Ty, stem: str = "t") -> tuple[str, Ty]:
        name = self.fresh(stem)
        self.out.emit(f"let {name}: {ty.rust()} = {expr};", self.line)
        return name, ty

    def lookup(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def rname(self, name: str) -> str:
        return C.rust_ident(name)

    def is_ct(self, node, attr=None) -> bool:
        return A._is_ct(node, self.alias, attr)

    def _kw(self, call, name, pos=None):
        return A._kw(call, name, pos)

    def check_kwargs(self, call, allowed: set):
        for k in call.keywords:
            if k.arg not in allowed:
                self.fail(call, f"{ast.unparse(call.func)}(..., {k.arg}=...)",
                          f"keyword '{k.arg}' not translated (allowed: {sorted(allowed)})")

    # ---- expressions ---------------------------------------------------------------
    def int_expr(self, node) -> str:
        e, ty = self.expr(node)
        if ty.kind == "lit" and isinstance(ty.value, int):
            return f"{ty.value}i32"
        if ty.kind != "i32":
            self.fail(node, ast.unparse(node), f"expected an int32 scalar, got {ty.kind}")
        return e

    def tile_expr(self, node) -> tuple[str, Ty]:
        e, ty = self.expr(node)
        if ty.kind != "tile":
            self.fail(node, ast.unparse(node), f"expected a tile, got {ty.kind}")
        return e, ty

    def lit_scalar(self, ty: Ty) -> tuple[Ty, str]:
        if isinstance(ty.value, bool) or not isinstance(ty.value, (int, float)):
            raise TypeError(ty)
        if isinstance(ty.value, int):
            return Ty("i32"), f"{ty.value}i32"
        return Ty("f32"), self.f32_lit(ty.value)

    @staticmethod
    def f32_lit(v: float) -> str:
        return f"{float(v)!r}f32".replace("inf", "INFINITY")

    def expr(self, node) -> tuple[str, Ty]:
        if isinstance(node, ast.Name):
            var = self.lookup(node.id)
            if var is None:
                self.fail(node, node.id, "name not defined in the kernel (globals are not translated)")
            return var.rust, var.ty
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return repr(node.value), Ty("lit", value=node.value)
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            e, ty = self.expr(node.operand)
            if ty.kind == "lit":
                return repr(-ty.value), Ty("lit", value=-ty.value)
            if ty.kind == "tile":
                return self.bind(f"negf({e})", ty)
            if ty.kind in ("i32", "f32"):
                return f"(-{e})", ty
        if isinstance(node, ast.Attribute):
            if self.is_ct(node) and node.attr in C.DTYPE_ATTRS:
                return node.attr, Ty("dtype", dtype=C.DTYPE_ATTRS[node.attr][1])
            if isinstance(node.value, ast.Name) and node.attr == "dtype":
                arr = self.array_arg(node.value)
                return "E", Ty("dtype", dtype=arr.ty.dtype)
        if isinstance(node, ast.Subscript) and A._is_shape_subscript(node):
            return self.shape_dim(node)
        if isinstance(node, ast.Call) and self.is_ct(node.func):
            return self.call(node)
        self.fail(node, ast.unparse(node)[:60], f"expression ({type(node).__name__}) not translated")

    def call(self, node: ast.Call) -> tuple[str, Ty]:
        """A ``ct.<name>(...)`` call: the rule ``CALLS[name]`` translates it."""
        name = node.func.attr
        rule = self.CALLS.get(name)
        if rule is None:
            self.fail(node, f"{self.alias}.{name}", "no translation rule for this cuTile call")
        return getattr(self, rule)(node)
