"""Stage ``write_kernel`` (role: kernel writer, backend ``translator``).

A deterministic translator from the cuTile Python AST of a ``@ct.kernel`` to a cuTile Rust
``#[cutile::module]`` with one ``#[cutile::entry()]`` function. It translates construct by
construct (never by operator name):

* what Python specialises at call time becomes generics of the entry: the array dtype is
  ``E: ElementType``, every ``ct.Constant[int]`` parameter a ``const NAME: i32``;
* arrays become ``&Tensor<E, {[-1, ...]}>`` (rank from the manifest), f32/i32 scalars stay;
* ``ct.load``/``ct.store`` become partition views (``make_partition_view`` with the same
  padding marker / ``partition_full_mut``) and indexed ``load``/``store_unchecked`` -- so both
  sides emit ``load_view_tko``/``store_view_tko`` on the same ``partition_view`` type. The store
  is cutile's *unchecked* one because cuTile Python emits ``store_view_tko`` with no bounds
  assert: cutile's checked ``store`` adds an ``assert`` it cannot discharge when the tile index
  comes from a persistent loop bounded by another array's tiles, which the IR diff shows as
  extra asserts and the H200 benchmark as a 4-12 % slower port (softmax, rms_norm, layer_norm,
  2026-11-29); the unchecked store is the reference's own operation;
* every tile-valued subexpression is bound to a typed ``let`` (cutile's compiler needs the
  result type of conversions and reductions), Python broadcasting becomes explicit
  ``reshape``/``broadcast``, scalars mixed with tiles become ``broadcast_scalar``;
* ``for x in range(...)`` becomes a Rust range loop; a name reassigned inside a loop that
  was bound outside it becomes a loop-carried ``let mut``.

A construct without a rule raises :class:`Unsupported` naming ``file:line`` and the construct;
the stage verdict is then BLOCKED. A source map (Rust line -> Python line) is written beside
the ``.rs`` file.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

from . import analyze as A
from . import constructs as C
from . import manifest as M
from . import source as S       # kernel-path plumbing (import_source): S.kernel_py(op_dir)
from .verdict import Finding, Verdict, atomic_write_text, loc, write


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


class KernelTranslator:
    """Translate one ``@ct.kernel`` function; see the module docstring for the rules."""

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

    # ---- entry ---------------------------------------------------------------------
    def translate(self) -> tuple[str, list]:
        """Returns (entry function source, source map [(rust line in fn, py line)])."""
        generics, args = ["E: ElementType"], []
        for p in self.params:
            rn = self.rname(p["name"])
            if p["kind"] == "array":
                dims = ", ".join(["-1"] * p["ndim"])
                args.append(f"{rn}: &Tensor<E, {{[{dims}]}}>")
                self.scopes[0][p["name"]] = Var(rn, Ty("arr", dtype="E", ndim=p["ndim"]), None, 0)
            elif p["kind"] == "constexpr" and p.get("ctype", "int") == "int":
                generics.append(f"const {rn}: i32")
                self.scopes[0][p["name"]] = Var(rn, Ty("i32"), None, 0)
            elif p["kind"] == "constexpr":
                # float/bool constexprs have no Rust const-generic form: each specialised
                # entry inlines its value (bool ones can only steer static `if`s)
                v = self.spec[p["name"]]
                self.scopes[0][p["name"]] = Var(repr(v), Ty("lit", value=v), None, 0)
            else:
                t = "f32" if p["kind"] == "scalar_f32" else "i32"
                args.append(f"{rn}: {t}")
                self.scopes[0][p["name"]] = Var(rn, Ty(t), None, 0)
        body = self.fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
        self.block(body)
        head = []
        if self.need_pid:
            head.append([2, "let __pid: (i32, i32, i32) = get_tile_block_id();", self.fn.lineno])
        if self.need_nblk:
            head.append([2, "let __nblk: (i32, i32, i32) = get_num_tile_blocks();", self.fn.lineno])
        lines = head + [ln for ln in self.out.lines if ln[1] is not None]
        sig = (f"    #[cutile::entry()]\n    pub unsafe fn {self.entry}<{', '.join(generics)}>(\n"
               + "".join(f"        {a},\n" for a in args) + "    ) {\n")
        text = sig + "".join("    " * ind + txt + "\n" for ind, txt, _ in lines) + "    }\n"
        first = sig.count("\n")
        smap = [(first + i + 1, pl) for i, (_, _, pl) in enumerate(lines)]
        # the `pub unsafe fn` line (second line of the signature) comes from the `def` line
        return text, [(2, self.fn.lineno)] + smap

    # ---- statements ----------------------------------------------------------------
    def block(self, stmts):
        for s in stmts:
            self.line = s.lineno
            try:
                self.stmt(s)
            except Unsupported:
                raise
            except (AttributeError, IndexError, KeyError, TypeError, ValueError,
                    ZeroDivisionError) as exc:
                # a malformed call (missing argument, wrong arity...) the rules did not foresee
                self.fail(s, ast.unparse(s).splitlines()[0][:80],
                          f"cannot translate this statement ({type(exc).__name__}: {exc}); "
                          f"check the cuTile call's arguments")

    def stmt(self, s):
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
                self.fail(s, ast.unparse(s).split("=")[0].strip(), "only `name = expr` assignments")
            self.assign(s.targets[0].id, s.value, s)
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            self.assign(s.target.id, ast.BinOp(left=ast.Name(s.target.id, ast.Load()), op=s.op,
                                               right=s.value, lineno=s.lineno), s)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and self.is_ct(s.value.func, "store"):
            self.store(s.value)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            pass  # a string used as a comment
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Return) and s.value is None and s is self.fn.body[-1]:
            pass
        elif isinstance(s, ast.For):
            self.for_loop(s)
        elif isinstance(s, ast.If):
            self.static_if(s)
        else:
            self.fail(s, type(s).__name__.lower() + ": " + ast.unparse(s).splitlines()[0][:60],
                      "statement not translated")

    def assign(self, name: str, value, node):
        expr, ty = self.expr(value)
        if ty.kind in ("lit",):
            ty, expr = self.lit_scalar(ty)
        if ty.kind in ("arr", "dtype"):
            self.fail(node, f"{name} = {ast.unparse(value)}", "aliasing an array or dtype is not translated")
        var = self.lookup(name)
        depth = len(self.scopes) - 1
        if var is not None and var.depth < depth and var.decl is not None:
            # loop-carried: assign to the outer binding (types must agree)
            if var.ty != ty:
                self.fail(node, name, f"reassigned in a loop with type {ty.rust()} but bound "
                                      f"outside as {var.ty.rust()}")
            ind, txt, pl = self.out.lines[var.decl]
            if txt.startswith("let ") and not txt.startswith("let mut "):
                self.out.lines[var.decl][1] = "let mut " + txt[4:]
            self.out.emit(f"{var.rust} = {expr};", self.line)
            return
        if var is not None and var.decl is None:
            self.fail(node, name, "rebinding a kernel parameter is not translated")
        rn = self.rname(name)
        last = self.out.lines[-1] if self.out.lines else None
        if (expr.startswith("__t") and last is not None and last[0] == self.out.indent
                and last[1].startswith(f"let {expr}: ")):
            # the value was just bound to a temporary: give that binding the Python name
            last[1] = f"let {rn}: " + last[1][len(f"let {expr}: "):]
            idx = len(self.out.lines) - 1
            if expr in self.muls:
                a, b, i, _, fl = self.muls.pop(expr)
                self.muls[rn] = (a, b, i, name, fl)
        else:
            idx = self.out.emit(f"let {rn}: {ty.rust()} = {expr};", self.line)
        self.scopes[-1][name] = Var(rn, ty, idx, depth)

    def static_if(self, s: ast.If):
        """``if`` on constexprs: cuTile evaluates it when it compiles a variant, so this entry
        (specialised for those constexpr values) keeps only the branch taken, inline (a Python
        ``if`` opens no scope)."""
        names = {n.id for n in ast.walk(s.test) if isinstance(n, ast.Name)}
        if not A.static_test(s.test, set(self.spec)) or not names <= set(self.spec):
            self.fail(s, "if " + ast.unparse(s.test), "only `if` on constexpr parameters is "
                                                      "translated (a runtime condition is not)")
        taken = eval(compile(ast.Expression(s.test), self.file, "eval"),  # noqa: S307
                     {"__builtins__": {}}, dict(self.spec))
        self.out.emit(f"// if {ast.unparse(s.test)}: {bool(taken)} for this entry", s.lineno)
        self.block(s.body if taken else s.orelse)

    def for_loop(self, s: ast.For):
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords and isinstance(s.target, ast.Name)
                and not s.orelse):
            self.fail(s, "for " + ast.unparse(it), "only `for <name> in range(...)` is translated")
        args = [self.int_expr(a) for a in it.args]
        var = self.rname(s.target.id)
        if len(args) == 1:
            head = f"for {var} in 0i32..{args[0]} {{"
        elif len(args) == 2:
            head = f"for {var} in {args[0]}..{args[1]} {{"
        else:
            head = f"for {var} in ({args[0]}..{args[1]}).step_by(({args[2]}) as usize) {{"
        self.out.emit(head, s.lineno)
        self.out.indent += 1
        self.scopes.append({s.target.id: Var(var, Ty("i32"), None, len(self.scopes))})
        self.block(s.body)
        self.scopes.pop()
        self.out.indent -= 1
        self.out.emit("}", s.lineno)

    # ---- memory --------------------------------------------------------------------
    def _kw(self, call, name, pos=None):
        return A._kw(call, name, pos)

    def array_arg(self, node) -> Var:
        if not isinstance(node, ast.Name) or self.lookup(node.id) is None or self.lookup(node.id).ty.kind != "arr":
            self.fail(node, ast.unparse(node), "expected an array parameter")
        return self.lookup(node.id)

    def shape_of(self, node) -> tuple:
        if not isinstance(node, ast.Tuple):
            self.fail(node, ast.unparse(node), "tile shape must be a tuple literal")
        dims = []
        for e in node.elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, int):
                dims.append(str(e.value))
            elif isinstance(e, ast.Name) and any(p["name"] == e.id and p["kind"] == "constexpr" for p in self.params):
                dims.append(self.rname(e.id))
            else:
                self.fail(e, ast.unparse(e), "tile shape entries must be int literals or constexpr names")
        return tuple(dims)

    def index_of(self, node, ndim: int) -> str:
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        if len(elts) != ndim:
            self.fail(node, ast.unparse(node), f"index has {len(elts)} entries, array rank is {ndim}")
        return "[" + ", ".join(self.int_expr(e) for e in elts) + "]"

    def view(self, arr: Var, shape: tuple, padding: str, node) -> str:
        name = self.fresh("view")
        self.out.emit(
            f"let {name}: Partition<E, {{[{', '.join(shape)}]}}> = make_partition_view("
            f"{arr.rust}, shape![{', '.join(shape)}], {padding}, dim_map::Identity, "
            f"get_tensor_token({arr.rust}));", self.line)
        return name

    def padding_of(self, call) -> str:
        pm = self._kw(call, "padding_mode")
        if pm is None:
            return C.PADDING["UNDETERMINED"]
        if isinstance(pm, ast.Attribute) and pm.attr in C.PADDING:
            return C.PADDING[pm.attr]
        self.fail(pm, ast.unparse(pm), "padding_mode must be a ct.PaddingMode member")

    def check_kwargs(self, call, allowed: set):
        for k in call.keywords:
            if k.arg not in allowed:
                self.fail(call, f"{ast.unparse(call.func)}(..., {k.arg}=...)",
                          f"keyword '{k.arg}' not translated (allowed: {sorted(allowed)})")

    def load(self, call) -> tuple[str, Ty]:
        self.check_kwargs(call, {"index", "shape", "padding_mode"})
        arr = self.array_arg(call.args[0] if call.args else None)
        idx_node, shp_node = self._kw(call, "index", 1), self._kw(call, "shape", 2)
        shape = self.shape_of(shp_node)
        if len(shape) != arr.ty.ndim:
            self.fail(call, "ct.load", f"tile rank {len(shape)} != array rank {arr.ty.ndim}")
        v = self.view(arr, shape, self.padding_of(call), call)
        return self.bind(f"{v}.load({self.index_of(idx_node, arr.ty.ndim)})", Ty("tile", "E", shape))

    def store(self, call):
        self.check_kwargs(call, {"index", "tile"})
        arr = self.array_arg(call.args[0] if call.args else None)
        idx_node, tile_node = self._kw(call, "index", 1), self._kw(call, "tile", 2)
        t, ty = self.tile_expr(tile_node)
        if ty.dtype != "E":
            self.fail(call, "ct.store", f"stored tile has dtype {ty.dtype}, array has the variant "
                                        "dtype: cast with ct.astype(t, arr.dtype) first")
        if len(ty.shape) != arr.ty.ndim:
            self.fail(call, "ct.store", f"tile rank {len(ty.shape)} != array rank {arr.ty.ndim}")
        name = self.fresh("out")
        self.out.emit(f"let mut {name}: PartitionMut<E, {{[{', '.join(ty.shape)}]}}> = "
                      f"{arr.rust}.partition_full_mut(shape![{', '.join(ty.shape)}]);", self.line)
        # the reference's store_view_tko carries no bounds assert: see the module docstring
        self.out.emit(f"{name}.store_unchecked({t}, {self.index_of(idx_node, arr.ty.ndim)});",
                      self.line)

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
            arr = self.array_arg(node.value.value)
            i = node.slice.value
            if not 0 <= i < arr.ty.ndim:
                self.fail(node, ast.unparse(node), f"axis {i} out of range for rank {arr.ty.ndim}")
            return f"get_shape_dim({arr.rust}.shape(), {i}i32)", Ty("i32")
        if isinstance(node, ast.Call) and self.is_ct(node.func):
            return self.call(node)
        self.fail(node, ast.unparse(node)[:60], f"expression ({type(node).__name__}) not translated")

    _OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}

    def binop(self, node: ast.BinOp) -> tuple[str, Ty]:
        op = self._OPS.get(type(node.op))
        if op is None:
            self.fail(node, ast.unparse(node), f"operator {type(node.op).__name__} not translated")
        return self.arith(op, node.left, node.right, node)

    DEFAULT_FLAGS = ("NearestEven", "Disabled")   # cuTile's default rounding, no flush-to-zero

    def arith(self, op: str, left, right, node, flags: tuple | None = None) -> tuple[str, Ty]:
        """``left op right`` for op in ``+ - * /``; ``flags`` = (Rust rounding marker, ftz marker)
        from ``ct.add/sub/mul/truediv(..., rounding_mode=, flush_to_zero=)`` (None: defaults)."""
        le, lt = self.expr(left)
        re_, rt = self.expr(right)
        if lt.kind == "lit" and rt.kind == "lit" and flags is None:  # fold, as the frontend does
            v = {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
                 "*": lambda a, b: a * b, "/": lambda a, b: a / b}[op](lt.value, rt.value)
            return repr(v), Ty("lit", value=v)
        if lt.kind != "tile" and rt.kind != "tile":
            kinds = {lt.kind, rt.kind} - {"lit"}
            if len(kinds) != 1 or kinds & {"arr", "dtype"} or flags is not None:
                self.fail(node, ast.unparse(node), f"scalar operands of kinds {lt.kind}/{rt.kind}")
            k = kinds.pop()
            if op == "/" and k == "i32":
                self.fail(node, ast.unparse(node), "true division of int scalars is not translated")
            le = self.scalar_as(le, lt, k, node)
            re_ = self.scalar_as(re_, rt, k, node)
            return f"({le} {op} {re_})", Ty(k)
        # at least one tile: broadcast
        dtype = lt.dtype if lt.kind == "tile" else rt.dtype
        if lt.kind == "tile" and rt.kind == "tile" and lt.dtype != rt.dtype:
            self.fail(node, ast.unparse(node), f"mixed tile dtypes {lt.dtype} and {rt.dtype}")
        shape = self.broadcast_shape(lt, rt, node)
        le = self.as_tile(le, lt, dtype, shape, node)
        re_ = self.as_tile(re_, rt, dtype, shape, node)
        ty = Ty("tile", dtype, shape)
        is_float = dtype in C.FLOAT_TILE_DTYPES
        eff = flags or self.DEFAULT_FLAGS
        if op in "+-" and is_float:
            fused = self.contract(le, re_, op, ty, eff)
            if fused is not None:
                return fused
        if flags is None:
            out = self.bind(f"{le} {op} {re_}", ty)
        else:
            if not is_float:
                self.fail(node, ast.unparse(node), "rounding/flush-to-zero options need float tiles")
            fn = {"+": "addf", "-": "subf", "*": "mulf", "/": "divf"}[op]
            out = self.bind(f"{fn}({le}, {re_}, rounding::{flags[0]}, ftz::{flags[1]})", ty)
        if op == "*" and is_float:
            self.muls[out[0]] = (le, re_, len(self.out.lines) - 1, None, eff)
        return out

    def contract(self, le: str, re_: str, op: str, ty: Ty, flags: tuple):
        """Contract ``a*b + c`` / ``a*b - c`` / ``c - a*b`` into ``fma`` exactly where cuTile
        Python's frontend does, so both sides compute with one rounding and the same machine
        code. The frontend's rule (cuda-tile 1.7.0, ``cuda/tile/_passes/rewrite_patterns.py``):
        a float add/sub one of whose operands is a float multiply used nowhere else, with the
        same rounding mode and flush-to-zero (the left operand is tried first), becomes
        ``fma(a, b, c)`` with those flags; for ``a*b - c`` the addend is negated, for
        ``c - a*b`` the multiply's left factor is. Returns None when no operand qualifies."""

        def single_use_mul(e):
            m = self.muls.get(e)
            if m is None or self.out.lines[m[2]][1] is None or m[4] != flags:
                return None
            if m[3] is not None and self.uses.get(m[3], 0) != 1:
                return None
            return m

        m, acc, mul_on_left = single_use_mul(le), re_, True
        if m is None:
            m, acc, mul_on_left = single_use_mul(re_), le, False
        if m is None:
            return None
        a, b, idx = m[0], m[1], m[2]
        self.out.lines[idx][1] = None      # the multiply is absorbed into the fma
        if op == "-":
            if mul_on_left:
                acc = self.bind(f"negf({acc})", ty)[0]
            else:
                a = self.bind(f"negf({a})", ty)[0]
        return self.bind(f"fma({a}, {b}, {acc}, rounding::{flags[0]}, ftz::{flags[1]})", ty)

    def flags_of(self, node: ast.Call, rounding: bool = True, ftz: bool = True,
                 nan: bool = False) -> dict:
        """Rust markers for a call's ``rounding_mode=``, ``flush_to_zero=``, ``propagate_nan=``
        keywords; absent ones are None. Raises Unsupported for non-literal values."""
        out = {"rounding": None, "ftz": None, "nan": None}
        for k in node.keywords:
            v = k.value
            if k.arg == "rounding_mode" and rounding:
                if v is None or (isinstance(v, ast.Constant) and v.value is None):
                    continue
                if not (isinstance(v, ast.Attribute) and v.attr in C.ROUNDING):
                    self.fail(node, ast.unparse(v), f"rounding_mode must be one of "
                                                    f"ct.RoundingMode.{sorted(C.ROUNDING)}")
                out["rounding"] = C.ROUNDING[v.attr]
            elif k.arg in ("flush_to_zero", "propagate_nan") and (ftz if k.arg == "flush_to_zero" else nan):
                if not (isinstance(v, ast.Constant) and isinstance(v.value, bool)):
                    self.fail(node, ast.unparse(v), f"{k.arg} must be True or False")
                out["ftz" if k.arg == "flush_to_zero" else "nan"] = "Enabled" if v.value else "Disabled"
            else:
                self.fail(node, f"{ast.unparse(node.func)}(..., {k.arg}=...)",
                          f"keyword '{k.arg}' not translated")
        return out

    def scalar_as(self, e, ty, kind, node) -> str:
        if ty.kind == "lit":
            if kind == "f32":
                return self.f32_lit(ty.value)
            if not isinstance(ty.value, int):
                self.fail(node, ast.unparse(node), "float literal in an int32 expression")
            return f"{ty.value}i32"
        return e

    def broadcast_shape(self, a: Ty, b: Ty, node) -> tuple:
        sa = a.shape if a.kind == "tile" else ()
        sb = b.shape if b.kind == "tile" else ()
        n = max(len(sa), len(sb))
        sa = ("1",) * (n - len(sa)) + tuple(sa)
        sb = ("1",) * (n - len(sb)) + tuple(sb)
        out = []
        for x, y in zip(sa, sb):
            if x == y or y == "1":
                out.append(x)
            elif x == "1":
                out.append(y)
            else:
                self.fail(node, ast.unparse(node), f"cannot broadcast tile shapes {a.shape} and {b.shape}")
        return tuple(out)

    def as_tile(self, e, ty: Ty, dtype: str, shape: tuple, node) -> str:
        """Make operand ``e`` a tile of ``shape`` (splat scalars, reshape+broadcast tiles)."""
        sh = f"shape![{', '.join(shape)}]"
        if ty.kind == "tile":
            if ty.shape == shape:
                return e
            if len(ty.shape) < len(shape):
                full = ("1",) * (len(shape) - len(ty.shape)) + tuple(ty.shape)
                e, ty = self.bind(f"{e}.reshape(shape![{', '.join(full)}])", Ty("tile", ty.dtype, full))
                if full == shape:
                    return e
            return self.bind(f"{e}.broadcast({sh})", Ty("tile", ty.dtype, shape))[0]
        if ty.kind == "i32" and dtype in C.FLOAT_TILE_DTYPES:
            self.fail(node, ast.unparse(node), "an int scalar mixed with a float tile is not "
                                               "translated (no int-to-float scalar rule yet)")
        if dtype != "f32" and ty.kind in ("lit", "f32"):
            self.fail(node, ast.unparse(node), f"scalar mixed with a {dtype} tile; cast the tile to "
                                               "ct.float32 first")
        if ty.kind == "lit":
            e = self.f32_lit(ty.value) if dtype == "f32" else f"{ty.value}i32"
        return self.bind(f"broadcast_scalar({e}, {sh})", Ty("tile", dtype, shape))[0]

    # ---- cuTile calls --------------------------------------------------------------
    def call(self, node: ast.Call) -> tuple[str, Ty]:
        name = node.func.attr
        if name == "load":
            return self.load(node)
        if name == "bid":
            self.need_pid = True
            return f"__pid.{self.axis_lit(node)}", Ty("i32")
        if name == "num_blocks":
            self.need_nblk = True
            return f"__nblk.{self.axis_lit(node)}", Ty("i32")
        if name == "num_tiles":
            self.check_kwargs(node, {"axis", "shape"})
            arr = self.array_arg(node.args[0])
            axis = self._kw(node, "axis", 1)
            shape = self.shape_of(self._kw(node, "shape", 2))
            if not (isinstance(axis, ast.Constant) and isinstance(axis.value, int)):
                self.fail(node, "ct.num_tiles", "axis must be an int literal")
            v = self.view(arr, shape, C.PADDING["UNDETERMINED"], node)
            return f"num_tiles(&{v}, {axis.value}i32)", Ty("i32")
        if name == "astype":
            e, ty = self.tile_expr(node.args[0])
            d, dty = self.expr(node.args[1] if len(node.args) > 1 else self._kw(node, "dtype"))
            if dty.kind != "dtype":
                self.fail(node, "ct.astype", "second argument must be a dtype")
            fl = self.flags_of(node, rounding=True, ftz=False)
            if dty.dtype == ty.dtype and not fl["rounding"]:
                return e, ty
            if fl["rounding"]:
                return self.bind(f"ftof({e}, rounding::{fl['rounding']})", Ty("tile", dty.dtype, ty.shape))
            return self.bind(f"convert_tile({e})", Ty("tile", dty.dtype, ty.shape))
        if name == "reshape":
            e, ty = self.tile_expr(node.args[0])
            shape = self.shape_of(node.args[1] if len(node.args) > 1 else self._kw(node, "shape"))
            return self.bind(f"{e}.reshape(shape![{', '.join(shape)}])", Ty("tile", ty.dtype, shape))
        if name in C.REDUCTIONS:
            self.check_kwargs(node, {"axis", "keepdims"})
            e, ty = self.tile_expr(node.args[0])
            axis = self._kw(node, "axis", 1)
            if (isinstance(axis, ast.UnaryOp) and isinstance(axis.op, ast.USub)
                    and isinstance(axis.operand, ast.Constant)):
                axis = ast.Constant(-axis.operand.value)
            if not (isinstance(axis, ast.Constant) and isinstance(axis.value, int)
                    and not isinstance(axis.value, bool)):
                self.fail(node, f"ct.{name}", "axis must be an int literal (reductions over all axes "
                                              "are not translated)")
            if not -len(ty.shape) <= axis.value < len(ty.shape):
                self.fail(node, f"ct.{name}", f"axis {axis.value} out of range for a rank-"
                                              f"{len(ty.shape)} tile")
            ax = axis.value % len(ty.shape)
            kd = self._kw(node, "keepdims")
            keep = isinstance(kd, ast.Constant) and kd.value is True
            red = tuple(d for i, d in enumerate(ty.shape) if i != ax)
            r, rty = self.bind(f"{C.REDUCTIONS[name]}({e}, {ax})", Ty("tile", ty.dtype, red))
            if keep:
                kept = tuple("1" if i == ax else d for i, d in enumerate(ty.shape))
                return self.bind(f"{r}.reshape(shape![{', '.join(kept)}])", Ty("tile", ty.dtype, kept))
            return r, rty
        if name in C.ARITH:
            if len(node.args) != 2:
                self.fail(node, f"ct.{name}", "expects two positional operands")
            fl = self.flags_of(node)
            flags = None
            if fl["rounding"] or fl["ftz"]:
                flags = (fl["rounding"] or self.DEFAULT_FLAGS[0], fl["ftz"] or self.DEFAULT_FLAGS[1])
            return self.arith(C.ARITH[name], node.args[0], node.args[1], node, flags)
        if name in C.FLAGGED_MATH:
            e, ty = self.tile_expr(node.args[0])
            tmpl, has_r, has_f = C.FLAGGED_MATH[name]
            fl = self.flags_of(node, rounding=has_r, ftz=has_f)
            return self.bind(tmpl.format(x=e, r=fl["rounding"] or self.DEFAULT_FLAGS[0],
                                         f=fl["ftz"] or self.DEFAULT_FLAGS[1]), ty)
        if name in C.UNARY_MATH:
            self.check_kwargs(node, set())
            e, ty = self.tile_expr(node.args[0])
            return self.bind(C.UNARY_MATH[name].format(x=e), ty)
        if name in C.BINARY_MATH:
            fl = self.flags_of(node, rounding=False, ftz=True, nan=True)
            le, lt = self.expr(node.args[0])
            re_, rt = self.expr(node.args[1])
            if "tile" not in (lt.kind, rt.kind):
                self.fail(node, f"ct.{name}", "needs at least one tile operand")
            dtype = lt.dtype if lt.kind == "tile" else rt.dtype
            shape = self.broadcast_shape(lt, rt, node)
            le = self.as_tile(le, lt, dtype, shape, node)
            re_ = self.as_tile(re_, rt, dtype, shape, node)
            if fl["ftz"] or fl["nan"]:
                fn = "maxf" if name == "maximum" else "minf"
                return self.bind(f"{fn}({le}, {re_}, nan::{fl['nan'] or 'Disabled'}, "
                                 f"ftz::{fl['ftz'] or 'Disabled'})", Ty("tile", dtype, shape))
            return self.bind(f"{C.BINARY_MATH[name]}({le}, {re_})", Ty("tile", dtype, shape))
        if name == "mma":
            a, at = self.tile_expr(node.args[0])
            b, bt = self.tile_expr(node.args[1])
            c, ct_ = self.tile_expr(node.args[2] if len(node.args) > 2 else self._kw(node, "acc"))
            if len(at.shape) != 2 or len(bt.shape) != 2 or at.shape[1] != bt.shape[0]:
                self.fail(node, "ct.mma", f"operand shapes {at.shape} x {bt.shape} are not (M,K)x(K,N)")
            return self.bind(f"mma({a}, {b}, {c})", ct_)
        if name in C.TILE_CREATION:
            shape = self.shape_of(node.args[0] if node.args else self._kw(node, "shape"))
            dnode = self._kw(node, "dtype", 2 if name == "full" else 1)
            if dnode is None:
                self.fail(node, f"ct.{name}", "dtype= is required")
            _, dty = self.expr(dnode)
            if name == "full":
                vnode = node.args[1] if len(node.args) > 1 else self._kw(node, "fill_value")
                _, vty = self.expr(vnode)
                if vty.kind != "lit":
                    self.fail(node, "ct.full", "fill value must be a literal")
                val = vty.value
            else:
                val = 0 if name == "zeros" else 1
            if dty.dtype == "f32":
                v = self.f32_lit(val)
            elif dty.dtype == "E" and val == 0:
                v = "E::ZERO"
            else:
                self.fail(node, f"ct.{name}", f"constant {val} of dtype {dty.dtype} not translated")
            return self.bind(f"constant({v}, shape![{', '.join(shape)}])", Ty("tile", dty.dtype, shape))
        self.fail(node, f"{self.alias}.{name}", "no translation rule for this cuTile call")

    def axis_lit(self, node) -> int:
        a = node.args[0] if node.args else None
        if not (isinstance(a, ast.Constant) and a.value in (0, 1, 2)):
            self.fail(node, ast.unparse(node), "grid axis must be the literal 0, 1 or 2")
        return a.value


MODULE_HEADER = """// Generated by tileport's translator (backend: translator) from {src}.
// Do not edit: edit the cuTile Python reference and rerun the workflow.
#[cutile::module]
pub mod port {{
    use cutile::core::*;

"""


def _display_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it lies below it (stable artefacts)."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def specialisation_keys(fn: ast.FunctionDef, params: list[dict]) -> list[str]:
    """Constexprs that split a kernel into several Rust entries: those read by static ``if``
    tests, and float/bool ones (no const-generic form in Rust); in parameter order."""
    cnames = {p["name"] for p in params if p["kind"] == "constexpr"}
    used = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.If) and A.static_test(n.test, cnames):
            used |= {x.id for x in ast.walk(n.test) if isinstance(x, ast.Name)}
    return [p["name"] for p in params if p["kind"] == "constexpr"
            and (p["name"] in used or p.get("ctype", "int") != "int")]


def translate_entries(op_dir: str | Path, kernel: str) -> tuple[str, list, dict]:
    """Translate one kernel of an operator into one Rust module.

    A kernel whose code depends on constexpr ``if``s or float/bool constexprs becomes one
    ``#[cutile::entry()]`` per distinct combination of those values over the manifest's
    variants (named ``<kernel>__<NAME><value>...``); otherwise one entry named like the kernel.

    Returns (Rust source of ``src/<kernel>.rs``, source map ``[(rust_line, py_line)]`` (1-based),
    ``{variant id: entry name}``).

    Raises:
        Unsupported: a construct without a rule (file:line: construct: reason).
        analyze.AnalysisError / manifest.ManifestError: bad operator input.
    """
    details = A.analyse(op_dir)
    kinfo = next((k for k in details["kernels"] if k["name"] == kernel), None)
    kfile = details["kernel_file"]
    if details["unsupported"]:      # the analysis is the gate: no port of a BLOCKED operator
        u = details["unsupported"][0]
        exc = Unsupported(u["file"], u["line"], u["construct"], u["reason"])
        exc.owner = u.get("owner", "kernel")      # manifest findings are the manifest's to fix
        raise exc
    if kinfo is None:
        raise Unsupported(kfile, 1, f"kernel {kernel}", "not found in the analysis")
    _manifest_forms_without_rule(kinfo, kfile)
    tree = ast.parse(Path(kfile).read_text(), filename=kfile)
    fn = next(f for f in A.kernel_functions(tree, details["tile_alias"]) if f.name == kernel)
    keys = specialisation_keys(fn, kinfo["params"])
    groups: dict[tuple, list[str]] = {}
    for v in kinfo.get("variants", details["variants"]):
        groups.setdefault(tuple(v["constexprs"][k] for k in keys), []).append(v["id"])
    header = MODULE_HEADER.format(src=_display_path(kfile))
    parts, smap, entries = [header], [], {}
    line = header.count("\n")
    for key, vids in groups.items():
        spec = dict(zip(keys, key))
        name = kernel if not keys else kernel + "__" + "_".join(
            f"{k}{M.Variant('x', {k: v}).id.split('-', 1)[1][len(k):]}" for k, v in spec.items())
        tr = KernelTranslator(fn, kinfo["params"], details["tile_alias"], kfile, spec, name)
        body, bmap = tr.translate()
        smap += [(r + line, p) for r, p in bmap]
        parts.append(body + "\n")
        line += body.count("\n") + 1
        entries.update({vid: name for vid in vids})
    return "".join(parts) + "}\n", smap, entries


class ToolLimit(Unsupported):
    """A manifest form the translator has no rule for yet (owner ``tool``, not the kernel)."""

    owner = "tool"


def _manifest_forms_without_rule(kinfo: dict, kfile: str) -> None:
    """The translator gives every array the variant's element type ``E`` (f16/bf16/f32) and
    knows f32/i32 scalars only (annotated or not: it reads the kind from analysis.json): a
    parameter the manifest describes otherwise (a fixed ``dtype``, ``list``, ``alias_group``,
    ``index_dtype`` i64, an i64 scalar, a variant dtype outside f16/bf16/f32) raises
    :class:`ToolLimit`."""
    for p in kinfo["params"]:
        why = None
        if p["kind"] == "array" and p.get("dtype", "{dtype}") != "{dtype}":
            why = (f"the manifest fixes its dtype to {p['dtype']}; the translator gives every array the "
                   f"variant's element type E and has no rule for an array of another dtype yet")
        elif p["kind"] == "array" and p.get("list"):
            why = "a list of arrays; the translator has no rule for list parameters yet"
        elif p["kind"] == "array" and p.get("alias_group"):
            why = (f"an array that may alias others (alias_group {p['alias_group']}); the translator's "
                   f"tensors are distinct borrows and it has no rule for aliasing parameters yet")
        elif p["kind"] == "array" and p.get("index_dtype") == "i64":
            why = "an array indexed with int64 (ct.IndexedWithInt64); the translator has no rule for it yet"
        elif p["kind"].startswith("scalar") and p["kind"] not in ("scalar_f32", "scalar_i32"):
            why = f"a {p.get('dtype')} scalar; the translator knows f32 and i32 scalars only"
        if why:
            raise ToolLimit(kfile, p.get("line"), f"parameter {p['name']}", why)
    for v in kinfo.get("variants", []):
        if v["dtype"] not in C.RUST_DTYPE:
            raise ToolLimit(kfile, kinfo.get("line"), f"variant {v['id']}",
                            f"variant dtype {v['dtype']}; the translator's element type E is one of "
                            f"{', '.join(C.RUST_DTYPE)} only")


def translate_kernel(op_dir: str | Path, kernel: str) -> tuple[str, list]:
    """:func:`translate_entries` without the entry table: (Rust source, source map)."""
    src, smap, _ = translate_entries(op_dir, kernel)
    return src, smap


def run(op_dir, kernel, out_rs, out_json, op, attempt: int = 1) -> dict:
    """Translate and write ``out_rs`` (+ ``.map.json`` source map) and a verdict.

    Verdict PASS, or BLOCKED naming the construct and file:line; the previous ``out_rs`` is
    left untouched when translation fails (an empty placeholder is written only if none exists,
    so downstream rules can still run and report BLOCKED)."""
    out_rs = Path(out_rs)
    try:
        src, smap, entries = translate_entries(op_dir, kernel)
    except Unsupported as exc:
        if not out_rs.exists():
            atomic_write_text(out_rs, f"// BLOCKED: {exc}\n")
        owner = getattr(exc, "owner", "kernel")
        return write(Verdict(stage="write_kernel", op=op, kernel=kernel, verdict="BLOCKED",
                             owner=owner, attempt=attempt, summary=str(exc),
                             findings=[Finding("unsupported", "critical", owner, str(exc),
                                               ref=loc(exc.file, exc.line, exc.construct))],
                             details={"backend": "translator", "construct": exc.construct}),
                     out_json)
    except (A.AnalysisError, ValueError) as exc:
        if not out_rs.exists():
            atomic_write_text(out_rs, f"// BLOCKED: {exc}\n")
        owner = getattr(exc, "owner", "kernel")     # import_source: an import tileport could not do
        return write(Verdict(stage="write_kernel", op=op, kernel=kernel, verdict="BLOCKED",
                             owner=owner, attempt=attempt, summary=str(exc),
                             findings=[Finding("input", "critical", owner, str(exc))],
                             details={"backend": "translator"}), out_json)
    atomic_write_text(out_rs, src)
    atomic_write_text(str(out_rs) + ".map.json", json.dumps(
        {"rust": str(out_rs), "python": _display_path(S.kernel_py(op_dir)),
         "lines": [[r, p] for r, p in smap], "entries": entries}) + "\n")
    return write(Verdict(stage="write_kernel", op=op, kernel=kernel, verdict="PASS", owner=None,
                         attempt=attempt, summary=f"translated {kernel} ({src.count(chr(10))} lines)",
                         details={"backend": "translator"},
                         artifacts={"rust": str(out_rs), "source_map": str(out_rs) + ".map.json"}),
                 out_json)


# ---------------------------------------------------------------------------------------------
# LLM backends of the kernel-writer role (tileport.agents); the translator above stays the
# deterministic backend. The LLM's file is only text: rust_build, rust_ir and ir_diff decide.

BACKENDS = ("translator", "anthropic", "replay", "auto")


def _llm_fields(op_dir, kernel, op, attempt, analysis_json, ref_ir, previous: str) -> dict:
    an = json.loads(Path(analysis_json).read_text())["details"]
    kinfo = next((k for k in an.get("kernels", []) if k["name"] == kernel), {})
    variant = an["variants"][0]["id"] if an.get("variants") else "?"
    return {"op": op, "kernel": kernel, "attempt": attempt, "variant": variant,
            "reference_source": S.kernel_py(op_dir).read_text(),
            # the LLM analyser's checked notes, when one ran (absent otherwise: the prompt, and so
            # the request hash of every earlier transcript, stays as it was)
            "analysis": json.dumps({"kernel": kinfo, "variants": an.get("variants", []),
                                    **({"analyser_notes": an["llm"]["notes"]} if (an.get("llm") or {}).get("notes")
                                       else {})}, indent=1),
            "reference_ir": Path(ref_ir).read_text() if ref_ir and Path(ref_ir).exists() else "(none)",
            "previous": previous}


def run_backend(op_dir, kernel, out_rs, out_json, op, backend: str = "translator", *,
                settings=None, analysis_json=None, ref_ir=None, results=None, replay_dir=None,
                attempt: int = 1, previous: str = "") -> dict:
    """Stage ``write_kernel`` with config.yaml's kernel-writer backend.

    ``translator``: :func:`run`. ``anthropic`` / ``replay``: one exchange (:mod:`tileport.agents`)
    with ``prompts/kernel_writer.md`` filled from kernel.py, the analysis and the reference IR
    (``ref_ir``) plus ``previous`` (the previous attempt's failure, IR diff and diagnosis, as
    :func:`tileport.route.decide` words it; empty on attempt 1); its transcript goes to
    ``results/<op>/transcripts/write_kernel/<kernel>/attempt-<n>.json`` (replay reads those under
    ``replay_dir`` and writes none). ``auto``: the translator first, the LLM only when it is
    BLOCKED. Verdicts: PASS (a file was written: later stages judge it), FAIL with
    ``fail_class: agent_output`` (no parsable output/VERDICT line), BLOCKED (the agent says a
    construct has no equivalent), ERROR with ``fail_class: env`` (no key, bad key, unknown model,
    network, replay miss). Never raises for those.
    """
    from . import agents

    if backend not in BACKENDS:
        raise ValueError(f"unknown kernel-writer backend '{backend}' (one of {BACKENDS})")
    results = Path(results) if results else Path(out_json).parents[4]
    if backend in ("translator", "auto"):
        d = run(op_dir, kernel, out_rs, out_json, op, attempt)
        if backend == "translator" or d["verdict"] == "PASS":
            return d
        previous = previous or ("The deterministic translator could not translate it: "
                                + d["summary"])
    llm = "replay" if backend == "replay" else "anthropic"
    tpath = agents.transcript_path(results, op, f"write_kernel/{kernel}", attempt)
    base = dict(stage="write_kernel", op=op, kernel=kernel, attempt=attempt)

    def placeholder(msg):
        if not Path(out_rs).exists():
            atomic_write_text(out_rs, f"// {msg}\n")

    try:
        fields = _llm_fields(op_dir, kernel, op, attempt, analysis_json, ref_ir, previous)
        # no absolute paths of this checkout in a prompt: replay must work from any clone
        fields = agents.without_repo(fields, Path(op_dir).resolve().parent.parent)
        req = agents.request_for("kernel_writer", fields, settings)
        be = (agents.ReplayBackend(replay_dir or results) if llm == "replay"
              else agents.AnthropicBackend(settings))
        t = agents.exchange(req, be, tpath, settings, stage="write_kernel", op=op, attempt=attempt,
                            record=llm != "replay")
    except (agents.AgentError, OSError, ValueError, KeyError) as exc:
        placeholder(f"ERROR: {exc}")
        fc = getattr(exc, "fail_class", "env")
        return write(Verdict(**base, verdict="ERROR", owner="env", fail_class=fc, summary=str(exc)[:800],
                             findings=[Finding("environment", "critical", "env", str(exc)[:1500])],
                             details={"backend": llm}), out_json)
    info = {"backend": llm, "model": t["model"], "usage": t["usage"], "cost_usd": t["cost_usd"],
            "transcript": str(tpath), "request_hash": t["request_hash"]}
    try:
        parsed = agents.parse_reply(t["reply"], "rust")
    except agents.AgentOutputError as exc:
        placeholder(f"agent_output: {exc}")
        return write(Verdict(**base, verdict="FAIL", owner="kernel", fail_class="agent_output",
                             summary=f"the LLM's reply is unusable: {exc}",  # same words live and in replay
                             findings=[Finding("input", "critical", "kernel", f"agent output: {exc}")],
                             details=info), out_json)
    info["agent_claim"] = {"verdict": parsed.verdict, "validation": parsed.validation}
    if parsed.verdict == "BLOCKED":
        placeholder("BLOCKED by the agent")
        return write(Verdict(**base, verdict="BLOCKED", owner="kernel", summary=(
            f"the LLM kernel writer says BLOCKED: {parsed.validation.get('unsupported', [])}")[:800],
            details=info), out_json)
    atomic_write_text(out_rs, parsed.output if parsed.output.endswith("\n") else parsed.output + "\n")
    atomic_write_text(str(out_rs) + ".map.json", json.dumps(
        {"rust": str(out_rs), "python": _display_path(S.kernel_py(op_dir)), "lines": [],
         "entries": {}}) + "\n")
    return write(Verdict(**base, verdict="PASS", summary=(
        f"{llm} wrote {kernel} ({parsed.output.count(chr(10)) + 1} lines; the agent claims "
        f"{parsed.verdict}, to be checked by rust_build/rust_ir/ir_diff)"), details=info,
        artifacts={"rust": str(out_rs), "transcript": str(tpath)}), out_json)
