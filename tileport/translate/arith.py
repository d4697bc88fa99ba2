"""Arithmetic and math: Python operators, ``ct.add/sub/mul/truediv``, elementwise math with
rounding / flush-to-zero / NaN keywords, ``ct.maximum/minimum``, ``ct.astype`` and tile
constants (``ct.full/zeros/ones``).

Every tile-valued subexpression is bound to a typed ``let`` (cutile's compiler needs the result
type of conversions), scalars mixed with tiles become ``broadcast_scalar``, and ``a*b ± c`` is
contracted into ``fma`` exactly where cuTile Python's frontend does (:meth:`ArithRules.contract`).
"""
from __future__ import annotations

import ast

from .. import constructs as C
from .core import Ty


class ArithRules:
    """Rules for arithmetic, math, casts and constants (mixed into the driver's translator)."""

    CALLS = {**{n: "arith_call" for n in C.ARITH}, **{n: "flagged_math" for n in C.FLAGGED_MATH},
             **{n: "unary_math" for n in C.UNARY_MATH}, **{n: "binary_math" for n in C.BINARY_MATH},
             **{n: "tile_constant" for n in C.TILE_CREATION}, "astype": "astype"}

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

    # ---- cuTile calls --------------------------------------------------------------
    def arith_call(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.add/sub/mul/truediv(a, b, rounding_mode=, flush_to_zero=)``."""
        name = node.func.attr
        if len(node.args) != 2:
            self.fail(node, f"ct.{name}", "expects two positional operands")
        fl = self.flags_of(node)
        flags = None
        if fl["rounding"] or fl["ftz"]:
            flags = (fl["rounding"] or self.DEFAULT_FLAGS[0], fl["ftz"] or self.DEFAULT_FLAGS[1])
        return self.arith(C.ARITH[name], node.args[0], node.args[1], node, flags)

    def flagged_math(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.exp2/rsqrt/sqrt`` with their rounding / flush-to-zero keywords."""
        e, ty = self.tile_expr(node.args[0])
        tmpl, has_r, has_f = C.FLAGGED_MATH[node.func.attr]
        fl = self.flags_of(node, rounding=has_r, ftz=has_f)
        return self.bind(tmpl.format(x=e, r=fl["rounding"] or self.DEFAULT_FLAGS[0],
                                     f=fl["ftz"] or self.DEFAULT_FLAGS[1]), ty)

    def unary_math(self, node: ast.Call) -> tuple[str, Ty]:
        self.check_kwargs(node, set())
        e, ty = self.tile_expr(node.args[0])
        return self.bind(C.UNARY_MATH[node.func.attr].format(x=e), ty)

    def binary_math(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.maximum/minimum(a, b, flush_to_zero=, propagate_nan=)`` with broadcasting."""
        name = node.func.attr
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

    def astype(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.astype(t, dtype, rounding_mode=)``: nothing when the dtype is already ``t``'s."""
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

    def tile_constant(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.full(shape, value, dtype)``, ``ct.zeros/ones(shape, dtype)``."""
        name = node.func.attr
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
