"""Arithmetic and math: Python operators, ``ct.add/sub/mul/truediv``, elementwise math with
rounding / flush-to-zero / NaN keywords, ``ct.maximum/minimum``, ``ct.astype`` and tile
constants (``ct.full/zeros/ones``).

Every tile-valued subexpression is bound to a typed ``let`` (cutile's compiler needs the result
type of conversions), scalars mixed with tiles become ``broadcast_scalar``, and ``a*b ± c`` is
contracted into ``fma`` exactly where cuTile Python's frontend does (:meth:`ArithRules.contract`).
"""
from __future__ import annotations

import ast
import math

from tileport.core import floats
from tileport.model import constructs

from .core import CONSTEXPR, DTYPE_KEY, JIT_INT, Ty
from .dtypes import is_int_cast, loose_dtype, promote

# a module-level declaration of Tile IR's divf with rounding mode full (IEEE division), which
# cutile 0.5.0's own divf cannot write (see ArithRules.binop)
DIVF_FULL_HELPER = """    /// Tile IR's divf with rounding mode full (IEEE-compliant division), as cuTile Python
    /// writes ct.truediv(..., rounding_mode=RoundingMode.FULL). cutile 0.5.0's divf maps the
    /// modes nearest_even, positive_inf, negative_inf, zero and approx only.
    #[cuda_tile::op(name = "cuda_tile.divf", since = "V13_2", params = ["lhs", "rhs"], static_params = ["rounding={Full: rounding_mode=#cuda_tile.rounding<full>}", "ftz={Enabled: flush_to_zero=unit}"])]
    #[cuda_tile::variadic_op(N = 6)]
    pub fn divf_full<E: ElementType, const S: [i32; N], R: rounding::Mode, F: ftz::Mode>(lhs: Tile<E, S>, rhs: Tile<E, S>, rounding: R, ftz: F) -> Tile<E, S> {
        unreachable!()
    }

"""  # noqa: E501 (Rust emitted verbatim: the op attribute is one line)


class ArithRules:
    """Rules for arithmetic, math, casts and constants (mixed into the driver's translator)."""

    CALLS = {**{n: "arith_call" for n in constructs.ARITH}, **{n: "flagged_math" for n in constructs.FLAGGED_MATH},
             **{n: "unary_math" for n in constructs.UNARY_MATH}, **{n: "binary_math" for n in constructs.BINARY_MATH},
             **{n: "tile_constant" for n in constructs.TILE_CREATION - {"arange"}}, "astype": "astype",
             "arange": "arange", "where": "where", "cdiv": "cdiv", "negative": "negative",
             **{f"bitwise_{k}": "bitwise_call" for k in ("and", "or", "xor", "lshift", "rshift", "not")},
             **{k: "compare_call" for k in ("equal", "not_equal", "less", "less_equal", "greater",
                                            "greater_equal")}}

    _OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}

    BITWISE = {ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "shl",
               ast.RShift: "shr"}

    def binop(self, node: ast.BinOp) -> tuple[str, Ty]:
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            return self.int_binary("floor" if isinstance(node.op, ast.FloorDiv) else "mod",
                                   node.left, node.right, node)
        if type(node.op) in self.BITWISE:
            return self.int_binary(self.BITWISE[type(node.op)], node.left, node.right, node)
        if isinstance(node.op, ast.Pow):
            return self.power(node)
        op = self._OPS.get(type(node.op))
        if op is None:
            self.fail(node, ast.unparse(node), f"operator {type(node.op).__name__} not translated")
        return self.arith(op, node.left, node.right, node)

    # float element types cuTile Python raises to an integer power with fpowi (its
    # is_unrestricted_float; tf32 and the f8 formats are restricted)
    FPOWI_BASES = ("E", "f16", "bf16", "f32", "f64")

    def power(self, node: ast.BinOp) -> tuple[str, Ty]:
        """``x ** n``: a float tile raised to an int32 exponent (a Python int or an int32
        scalar / tile) is one ``fpowi`` (cutile 0.5.0 ``fpowi``, Tile IR 13.4), the exponent an
        int32 tile of the broadcast shape, as cuda-tile 1.7.0 lowers it
        (``_ir/arithmetic_ops.py`` ``pow_tensorlike``: ``RawFPowIOperation`` when the base is an
        unrestricted float, the exponent's dtype fits int32 and tileiras is 13.4 or newer; the
        pinned tileiras is 13.4.92). A float exponent (cuTile's ``FPowFOp``) and a power of
        two Python numbers are refused (no rule yet)."""
        le, lt = self.expr(node.left)
        re_, rt = self.expr(node.right)
        what = ast.unparse(node)
        if lt.kind != "tile" or lt.dtype not in self.FPOWI_BASES:
            self.fail(node, what, "`**` is translated for a float tile base (f16, bf16, f32, f64) only")
        if rt.kind == "lit" and not (isinstance(rt.value, int) and not isinstance(rt.value, bool)):
            self.fail(node, what, "`**` with a float exponent (cuTile's FPowFOp) is not translated")
        if rt.kind == "lit" and not -2 ** 31 <= rt.value < 2 ** 31:
            self.fail(node, what, f"the exponent {rt.value} is out of int32 range")
        if rt.kind not in ("lit", "i32") and not (rt.kind == "tile" and rt.dtype == "i32"):
            self.fail(node, what, "`**` needs an int32 exponent (a Python int, an int32 scalar or tile)")
        shape = self.broadcast_shape(lt, rt, node)
        base = self.as_tile(le, lt, lt.dtype, shape, node)
        if rt.kind == "lit":
            exp = self.constant_tile(rt.value, "i32", shape, node)[0]
        else:
            exp = self.int_tile(re_, rt, shape, node)
        return self.bind(f"fpowi({base}, {exp})", Ty("tile", lt.dtype, shape))

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
            if not kinds <= {"i32", "f32"} or flags is not None:
                self.fail(node, ast.unparse(node), f"scalar operands of kinds {lt.kind}/{rt.kind}")
            k = self.scalar_result(lt, rt, op, node)
            le = self.scalar_as(le, lt, k, node)
            re_ = self.scalar_as(re_, rt, k, node)
            if k == "i32" and op in "+-*" and self.jit_int(lt) and self.jit_int(rt):
                # still known when cutile compiles the entry: a `//` of it folds too
                return f"({le} {op} {re_})", self.jit_int_ty(lt, rt)
            return f"({le} {op} {re_})", Ty(k)
        # at least one tile: broadcast
        le, re_, dtype, shape = self.broadcast_operands(le, lt, re_, rt, node)
        ty = Ty("tile", dtype, shape)
        is_float = dtype in constructs.FLOAT_TILE_DTYPES
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
            if op == "/" and flags[0] == "Full":
                # IEEE division (Unsloth's act_quant: ct.truediv(..., rounding_mode=RMd.FULL)):
                # cutile 0.5.0's divf has no Full mode (src/_core.rs:2639 maps five modes, not
                # full: its bytecode writer then fails, "missing attribute 'rounding_mode' on op
                # DivF"); the module declares Tile IR's divf with that mode (DIVF_FULL_HELPER)
                self.need_divf_full = True
                out = self.bind(f"divf_full({le}, {re_}, rounding::Full, ftz::{flags[1]})", ty)
            else:
                out = self.bind(f"{fn}({le}, {re_}, rounding::{flags[0]}, ftz::{flags[1]})", ty)
        if op == "*" and is_float:
            # (lhs, rhs, its line, reads of the Python binding it gets (None: a temporary), flags)
            self.muls[out[0]] = (le, re_, len(self.out.lines) - 1, None, eff)
        return out

    def contract(self, le: str, re_: str, op: str, ty: Ty, flags: tuple):
        """Contract ``a*b + c`` / ``a*b - c`` / ``c - a*b`` into ``fma`` exactly where cuTile
        Python's frontend does, so both sides compute with one rounding and the same machine
        code. The frontend's rule (cuda-tile 1.7.0, ``cuda/tile/_passes/rewrite_patterns.py``):
        a float add/sub one of whose operands is a float multiply used nowhere else, with the
        same rounding mode and flush-to-zero, becomes ``fma(a, b, c)`` with those flags; for
        ``a*b - c`` the addend is negated, for ``c - a*b`` the multiply's left factor is. The
        operand is chosen first -- the left one when it is a float multiply at all, else the
        right one -- and only then checked: a left multiply used elsewhere (or with other
        flags) leaves the add unfused even when the right one would qualify (``wdy - xhat * c``
        with ``wdy`` read twice, TileGym's RMSNorm backward). Returns None when no fma."""

        def mul_of(e):
            m = self.muls.get(e)
            return None if m is None or self.out.lines[m[2]][1] is None else m

        m, acc, mul_on_left = mul_of(le), re_, True
        if m is None:
            m, acc, mul_on_left = mul_of(re_), le, False
        if m is None or m[4] != flags or (m[3] is not None and m[3] != 1):
            return None
        a, b, idx = m[0], m[1], m[2]
        self.out.lines[idx][1] = None      # the multiply is absorbed into the fma
        carried = self.carried_products.pop(le if mul_on_left else re_, None)
        if carried is not None:            # and the loop-carried name's assignment of it
            self.out.lines[carried][1] = None
        if op == "-":
            if mul_on_left:
                acc = self.bind(f"negf({acc})", ty)[0]
            else:
                a = self.bind(f"negf({a})", ty)[0]
        return self.bind(f"fma({a}, {b}, {acc}, rounding::{flags[0]}, ftz::{flags[1]})", ty)

    def flags_of(self, node: ast.Call, rounding: bool = True, ftz: bool = True,
                 nan: bool = False) -> dict:
        """Rust markers for a call's ``rounding_mode=``, ``flush_to_zero=``, ``propagate_nan=``
        keywords; absent ones are None. Raises Unsupported for a value not known at compile time."""
        out = {"rounding": None, "ftz": None, "nan": None}
        for k in node.keywords:
            v = k.value
            if k.arg == "rounding_mode" and rounding:
                if v is None or (isinstance(v, ast.Constant) and v.value is None):
                    continue
                member = self.enum_of(v)
                if member is None or member.enum != "RoundingMode" or member.name not in constructs.ROUNDING:
                    self.fail(node, ast.unparse(v), "rounding_mode: " + self.enum_refusal(
                        v, "RoundingMode", constructs.ROUNDING))
                out["rounding"] = constructs.ROUNDING[member.name]
            elif k.arg in ("flush_to_zero", "propagate_nan") and (ftz if k.arg == "flush_to_zero" else nan):
                # a literal, a bool constexpr of this entry or a module constant: cuTile Python
                # reads the keyword at compile time (as keepdims= and allow_tma=)
                on = self.const_value(v)
                if not isinstance(on, bool):
                    self.fail(node, ast.unparse(v), f"{k.arg} must be True, False or a bool constexpr")
                out["ftz" if k.arg == "flush_to_zero" else "nan"] = "Enabled" if on else "Disabled"
            else:
                self.fail(node, f"{ast.unparse(node.func)}(..., {k.arg}=...)",
                          f"keyword '{k.arg}' not translated")
        return out

    def scalar_result(self, lt: Ty, rt: Ty, op: str, node) -> str:
        """The type of ``l op r`` on scalars (i32 / f32 / Python numbers, not both numbers),
        cuTile Python's promotion (:mod:`.dtypes`): a Python float with an int32 is f32, int32
        with f32 is f32; true division of ints is f32 (its ``force_float``)."""
        k = self.result_dtype(lt, rt, node)
        if k not in ("i32", "f32"):
            self.fail(node, ast.unparse(node), f"a scalar of dtype {k} is not translated")
        return "f32" if op == "/" else k

    def scalar_as(self, e, ty, kind, node) -> str:
        """A scalar operand as a ``kind`` (i32 / f32) scalar: a literal of that type, an int32
        scalar converted to f32 (``convert_scalar``: ``itof`` signed, as cuTile's astype)."""
        if ty.kind == "lit":
            if kind == "f32":
                return self.f32_lit(ty.value)
            if not isinstance(ty.value, int):
                self.fail(node, ast.unparse(node), "float literal in an int32 expression")
            return f"{ty.value}i32"
        if ty.kind == "i32" and kind == "f32":
            return self.bind(f"convert_scalar({e})", Ty("f32"))[0]
        if ty.kind != kind:
            self.fail(node, ast.unparse(node), f"a {ty.kind} scalar where a {kind} one is expected")
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
        return self.arith(constructs.ARITH[name], node.args[0], node.args[1], node, flags)

    def negative(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.negative(x)``: "same as ``-x``" (cuda/tile/_stub.py), the unary minus of
        :meth:`expr` (``negf`` of a tile, a negated scalar or literal)."""
        self.check_kwargs(node, set())
        if len(node.args) != 1:
            self.fail(node, "ct.negative", "expects one positional operand")
        e, ty = self.expr(ast.copy_location(ast.UnaryOp(op=ast.USub(), operand=node.args[0]), node))
        if ty.kind == "tile" and ty.dtype not in constructs.FLOAT_TILE_DTYPES:
            # negi carries an overflow mode cutile's unary minus does not spell the same way
            self.fail(node, ast.unparse(node), f"ct.negative of a {ty.dtype} tile (negi) is not translated; "
                                               f"float tiles only")
        return e, ty

    def flagged_math(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.exp2/rsqrt/sqrt`` with their rounding / flush-to-zero keywords."""
        e, ty = self.tile_expr(node.args[0])
        tmpl, has_r, has_f = constructs.FLAGGED_MATH[node.func.attr]
        fl = self.flags_of(node, rounding=has_r, ftz=has_f)
        return self.bind(tmpl.format(x=e, r=fl["rounding"] or self.DEFAULT_FLAGS[0],
                                     f=fl["ftz"] or self.DEFAULT_FLAGS[1]), ty)

    def unary_math(self, node: ast.Call) -> tuple[str, Ty]:
        """Elementwise math; ``ct.exp/tanh(x, rounding_mode=)`` (FULL, cuTile's default for
        them, or APPROX) is cutile's ``exp/tanh_with_rounding`` with that mode, which prints the
        op's rounding attribute as cuTile Python does."""
        name = node.func.attr
        self.check_kwargs(node, {"rounding_mode"} if name in constructs.ROUNDED_MATH else set())
        e, ty = self.tile_expr(node.args[0])
        mode = self._kw(node, "rounding_mode")
        if mode is not None and not (isinstance(mode, ast.Constant) and mode.value is None):
            member = self.enum_of(mode)
            if member is None or member.enum != "RoundingMode" or member.name not in constructs.ROUNDED_MATH_MODES:
                self.fail(node, ast.unparse(mode), f"ct.{name}'s rounding_mode: " + self.enum_refusal(
                    mode, "RoundingMode", constructs.ROUNDED_MATH_MODES))
            fl = self.flags_of(node, rounding=True, ftz=False)
            return self.bind(constructs.ROUNDED_MATH[name].format(x=e, r=fl["rounding"]), ty)
        return self.bind(constructs.UNARY_MATH[name].format(x=e), ty)

    def binary_math(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.maximum/minimum(a, b, flush_to_zero=, propagate_nan=)`` with broadcasting."""
        name = node.func.attr
        fl = self.flags_of(node, rounding=False, ftz=True, nan=True)
        le, lt = self.expr(node.args[0])
        re_, rt = self.expr(node.args[1])
        return self.minmax_values(name, (le, lt), (re_, rt), fl, node)

    def minmax_values(self, name: str, left: tuple, right: tuple, fl: dict, node) -> tuple[str, Ty]:
        """``ct.maximum/minimum`` (``name``) of two translated operands ``(expr, Ty)``."""
        (le, lt), (re_, rt) = left, right
        if "tile" not in (lt.kind, rt.kind):
            # scalars (cuTile's 0-d tiles): int32 ones as Python's min/max on ints; f32 ones
            # through 0-d tiles
            if lt.kind == rt.kind == "lit" and not (fl["ftz"] or fl["nan"]):
                v = (min if name == "minimum" else max)(lt.value, rt.value)
                return repr(v), Ty("lit", value=v)
            k = self.scalar_result(lt, rt, "min", node)
            a, b = (self.bind(f"scalar_to_tile({self.scalar_as(e, t, k, node)})", Ty("tile", k, ()))[0]
                    for e, t in ((le, lt), (re_, rt)))
            if k == "i32" and not (fl["ftz"] or fl["nan"]):
                r = self.bind(f"{name[:3]}i({a}, {b})", Ty("tile", "i32", ()))[0]
            else:
                r, _ = self.binary_tiles(name, a, b, k, (), fl)
            return self.bind(f"tile_to_scalar({r})", Ty(k))
        le, re_, dtype, shape = self.broadcast_operands(le, lt, re_, rt, node)
        return self.binary_tiles(name, le, re_, dtype, shape, fl)

    def binary_tiles(self, name: str, le: str, re_: str, dtype: str, shape: tuple, fl: dict):
        """``ct.maximum/minimum`` of two tiles of one dtype and shape."""
        if fl["ftz"] or fl["nan"]:
            fn = "maxf" if name == "maximum" else "minf"
            return self.bind(f"{fn}({le}, {re_}, nan::{fl['nan'] or 'Disabled'}, "
                             f"ftz::{fl['ftz'] or 'Disabled'})", Ty("tile", dtype, shape))
        return self.bind(f"{constructs.BINARY_MATH[name]}({le}, {re_})", Ty("tile", dtype, shape))

    def astype(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.astype(t, dtype, rounding_mode=)``. A cast to ``t``'s own element type is nothing
        (cuTile Python emits no op, rounding mode or not; an ``ftof`` between equal types is
        invalid Tile IR that tileirdisasm rejects). Without a rounding mode, or between E and
        the type E is in this entry, the cast is cutile's ``convert_tile`` (nothing in the IR
        when the types agree once E is known; it retypes the value for rustc); with a rounding
        mode between different types an ``ftof`` with it, so an E side needs the entry's
        concrete element type."""
        d, dty = self.expr(node.args[1] if len(node.args) > 1 else self._kw(node, "dtype"))
        if dty.kind != "dtype":
            self.fail(node, "ct.astype", "second argument must be a dtype")
        v = self.const_value(node.args[0])
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not self._kw(node, "rounding_mode"):
            # a Python number (``ct.astype(0.0, LOSS.dtype)``, Liger's TVD): cuTile Python makes
            # it a loosely typed constant and the cast a 0-d constant of the target dtype
            return self.constant_tile(v, dty.dtype, (), node)
        e, ty = self.expr(node.args[0])
        if ty.kind in ("i32", "f32") and dty.dtype == ty.kind:
            return e, ty        # a 0-d value (``ct.gather(r, row).item()``) cast to its own type
        if ty.kind in ("i32", "f32"):
            # a run-time scalar cast to another dtype (``ct.astype(offset, x.dtype)`` of an f32
            # parameter, Liger's modulated RMSNorm): cuTile Python's scalar is a 0-d tile, and
            # the cast is that tile's (an ``ftof`` where the types differ, nothing where E is f32)
            e, ty = self.bind(f"scalar_to_tile({e})", Ty("tile", ty.kind, ()))
        if ty.kind != "tile":
            self.fail(node.args[0], ast.unparse(node.args[0]), f"expected a tile, got {ty.kind}")
        fl = self.flags_of(node, rounding=True, ftz=False)
        if ty.dtype == dty.dtype:
            return e, ty
        if e in self.muls and not fl["rounding"] and ty.dtype == "E" and dty.dtype == "f32":
            # a pending product of the variant's dtype widened to f32 (``ct.astype(dy * xs,
            # ct.float32)`` then accumulated, Liger's RMSNorm backward): where E is f32 the cast
            # is nothing and cuTile Python contracts the add into an fma, elsewhere the cast
            # keeps them apart -- one entry per dtype, as for the implicit cast
            # (ShapeRules.promoted)
            same = self.decide([a == b for a, b in zip(self.concretes(ty.dtype), self.concretes(dty.dtype))],
                               node, "a cast of a product (whether it contracts into an fma)")
            if same:
                return self.product_as(e, ty, dty.dtype, node)
        if fl["rounding"] and not self.same_dtype(ty.dtype, dty.dtype):
            other = dty.dtype if ty.dtype == "E" else ty.dtype
            if ("E" in (ty.dtype, dty.dtype) and DTYPE_KEY not in self.spec
                    and other in {constructs.RUST_DTYPE.get(d) for d in self.dtypes}):
                self.need_dtype = True      # a no-op for the variants where E is the other type
            return self.bind(f"ftof({e}, rounding::{fl['rounding']})", Ty("tile", dty.dtype, ty.shape))
        if is_int_cast(ty.dtype, dty.dtype):
            return self.cast_tile(e, ty, dty.dtype, node)     # exti / trunci, as cuTile Python
        return self.bind(f"convert_tile({e})", Ty("tile", dty.dtype, ty.shape))

    def same_dtype(self, a: str, b: str) -> bool:
        """Are element types ``a`` and ``b`` (Rust names or 'E') the same in this entry?"""
        concrete = {"E": constructs.RUST_DTYPE.get(self.spec.get(DTYPE_KEY), "E")}
        return concrete.get(a, a) == concrete.get(b, b)

    # ---- integer division, remainder, min/max ------------------------------------------
    INT_FOLD = {"floor": lambda a, b: a // b, "mod": lambda a, b: a % b,
                "ceil": lambda a, b: -(-a // b), "min": min, "max": max,
                "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
                "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b}
    # bitwise kinds -> cutile op (the << operator: cutile's shli function cannot encode `overflow::None`;
    # shri is arithmetic on i32)
    BIT_OPS = {"and": "andi({a}, {b})", "or": "ori({a}, {b})", "xor": "xori({a}, {b})",
               "shl": "{a} << {b}", "shr": "shri({a}, {b})"}

    def cdiv(self, node: ast.Call) -> tuple[str, Ty]:
        self.check_kwargs(node, set())
        if len(node.args) != 2:
            self.fail(node, "ct.cdiv", "expects (x, y)")
        return self.int_binary("ceil", node.args[0], node.args[1], node)

    def bitwise_call(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.bitwise_and/or/xor/lshift/rshift(x, y)``, ``ct.bitwise_not(x)``: the operators."""
        self.check_kwargs(node, set())
        kind = node.func.attr[len("bitwise_"):]
        if kind == "not":
            if len(node.args) != 1:
                self.fail(node, ast.unparse(node), "expects one operand")
            return self.invert(ast.copy_location(ast.UnaryOp(ast.Invert(), node.args[0]), node))
        if len(node.args) != 2:
            self.fail(node, ast.unparse(node), "expects two operands")
        kind = {"lshift": "shl", "rshift": "shr"}.get(kind, kind)
        return self.int_binary(kind, node.args[0], node.args[1], node)

    def builtin_minmax(self, node: ast.Call) -> tuple[str, Ty]:
        """Python's ``min(a, b)`` / ``max(a, b)``: on ints ``mini`` / ``maxi`` (signed); on
        floats (tiles or scalars) cuTile Python's ``min``/``max`` overload of tiles, the same
        ``minf``/``maxf`` as ``ct.minimum/maximum(a, b)`` without flags (cuda-tile 1.7.0
        ``arithmetic_ops``: both are ``binary_arithmetic_tensorlike``)."""
        if len(node.args) != 2 or node.keywords:
            self.fail(node, ast.unparse(node), f"{node.func.id}() of two values only is translated")
        left, right = self.expr(node.args[0]), self.expr(node.args[1])
        kinds = {t.dtype if t.kind == "tile" else t.kind for _, t in (left, right) if t.kind != "lit"}
        if kinds - {"i32"}:
            return self.minmax_values("minimum" if node.func.id == "min" else "maximum", left, right,
                                      {"rounding": None, "ftz": None, "nan": None}, node)
        return self.int_binary(node.func.id, node.args[0], node.args[1], node, values=(left, right))

    def int_binary(self, kind: str, left, right, node, values: tuple | None = None) -> tuple[str, Ty]:
        """``a // b`` (floor), ``a % b`` (Python's modulo), ``ct.cdiv`` (ceil), ``min``/``max`` on
        int32 scalars or tiles, as cuTile Python computes them (cuda-tile 1.7.0 Tile IR):
        ``divi`` rounding to -inf / +inf, ``mini``/``maxi``, and for ``%`` the C remainder
        ``remi`` corrected to the divisor's sign (``select((r < 0) ^ (b < 0) & r != 0, r + b,
        r)``). Literals fold (as the frontend folds constants); a scalar goes through a 0-d tile
        (cutile's integer ops are tile ops)."""
        (le, lt), (re_, rt) = values or (self.expr(left), self.expr(right))
        if lt.kind == "lit" and rt.kind == "lit":
            if kind in ("floor", "mod", "ceil") and rt.value == 0:
                self.fail(node, ast.unparse(node), "division by zero")
            v = self.INT_FOLD[kind](lt.value, rt.value)
            return repr(v), Ty("lit", value=v)
        if kind in ("floor", "mod", "ceil") and self.jit_int(lt) and self.jit_int(rt):
            return self.jit_int_division(kind, le, lt, re_, rt, node)
        kinds = {t.dtype if t.kind == "tile" else t.kind for t in (lt, rt) if t.kind != "lit"}
        if kind in ("and", "or", "xor") and kinds == {"bool"} and "lit" not in (lt.kind, rt.kind):
            shape = self.broadcast_shape(lt, rt, node)     # masks: & | ^ of bool tiles
            a, b = (self.as_tile(e, t, "bool", shape, node) for e, t in ((le, lt), (re_, rt)))
            return self.bind(self.BIT_OPS[kind].format(a=a, b=b), Ty("tile", "bool", shape))
        if kinds != {"i32"}:
            self.fail(node, ast.unparse(node), f"{ {'floor': '//', 'mod': '%', 'ceil': 'ct.cdiv'}.get(kind, kind)} "
                                               f"is translated on int32 values only (got {sorted(kinds)})")
        scalar = "tile" not in (lt.kind, rt.kind)
        shape = () if scalar else self.broadcast_shape(lt, rt, node)
        a, b = (self.int_tile(e, t, shape, node) for e, t in ((le, lt), (re_, rt)))
        ty = Ty("tile", "i32", shape)
        if kind in self.BIT_OPS:
            r = self.bind(self.BIT_OPS[kind].format(a=a, b=b), ty)[0]
        elif kind in ("floor", "ceil"):
            r = self.bind(f"divi({a}, {b}, rounding::{'NegativeInf' if kind == 'floor' else 'PositiveInf'})", ty)[0]
        elif kind in ("min", "max"):
            r = self.bind(f"{kind}i({a}, {b})", ty)[0]
        else:
            sh = f"shape![{', '.join(shape)}]"
            rem = self.bind(f"remi({a}, {b})", ty)[0]
            zero = self.bind(f"constant(0i32, {sh})", ty)[0]
            bty = Ty("tile", "bool", shape)
            r_neg = self.bind(f"cmpi({rem}, {zero}, predicate::LessThan)", bty)[0]
            b_neg = self.bind(f"cmpi({b}, {zero}, predicate::LessThan)", bty)[0]
            signs = self.bind(f"xori({r_neg}, {b_neg})", bty)[0]
            nonzero = self.bind(f"cmpi({rem}, {zero}, predicate::NotEqual)", bty)[0]
            fix = self.bind(f"andi({signs}, {nonzero})", bty)[0]
            plus = self.bind(f"{rem} + {b}", ty)[0]
            r = self.bind(f"select({fix}, {plus}, {rem})", ty)[0]
        if scalar:
            return self.bind(f"tile_to_scalar({r})", Ty("i32"))
        return r, ty

    @staticmethod
    def jit_int(ty: Ty) -> bool:
        """Is ``ty`` an int whose value cutile knows when it compiles the entry: an int literal, an
        int constexpr kept as a const generic (also under a helper's parameter name), or Rust
        scalar ``+ - * // % cdiv`` and unary minus of those (:data:`.core.JIT_INT`, also bound to
        a local name: ``num_chunks = (N_COLS + TILE_SIZE - 1) // TILE_SIZE``)?"""
        if ty.kind == "lit":
            return type(ty.value) is int
        return ty.kind == "i32" and isinstance(ty.value, str) and (
            ty.value.startswith(CONSTEXPR + ":") or ty.value.startswith(JIT_INT + ":"))

    @staticmethod
    def jit_int_ty(*tys: Ty) -> Ty:
        """The int32 scalar type of an expression of the jit-known ints ``tys`` (:meth:`jit_int`),
        marked with the constexprs it reads. Overflow: the value is i32 arithmetic, as cutile's
        scalar ops and their folding compute it (two's complement wrap, and no exception for
        ``i32::MIN / -1``), where cuTile Python folds in Python ints and makes the result an int32
        constant (an error out of range); the two agree while every intermediate fits in i32."""
        names: list[str] = []
        for t in tys:
            if t.kind == "i32":
                for n in t.value.split(":", 1)[1].split(","):
                    if n and n not in names:
                        names.append(n)
        return Ty("i32", value=f"{JIT_INT}:{','.join(names)}")

    def jit_int_division(self, kind: str, le: str, lt: Ty, re_: str, rt: Ty, node) -> tuple[str, Ty]:
        """``a // b``, ``a % b``, ``ct.cdiv(a, b)`` of int constexprs (const generics, or one of
        them a literal): cuTile Python folds them to a constant (``range(head_size // BLOCK_HEAD)``
        is ``for ... to 1``). cutile folds Rust scalar ``+ - * / %`` on const generics (Rust
        semantics: ``/`` truncates, ``%`` takes the dividend's sign), but not the ``divi`` /
        ``remi`` ops on 0-d tiles that :meth:`int_binary` writes for other operands, and tileiras
        13.4 does not fold those either: a loop bounded by ``divi %c64, %c64`` was not unrolled
        and got another pipeline (tg_mamba2 compute_dd_dcb_dx_kernel bf16-cs64_hpg8_N128:
        256 threads instead of 128, 23008 SASS instructions instead of 12896, 11 % slower).
        Python's floor semantics from truncating ops, exact for either sign:
        ``m = ((a % b) + b) % b`` (the modulo with the divisor's sign), ``a // b = (a - m) / b``
        (an exact division), ``cdiv(a, b) = 0 - (0 - a) // b``."""
        a, b = (self.scalar_as(e, t, "i32", node) for e, t in ((le, lt), (re_, rt)))
        if rt.kind == "lit" and rt.value == 0:
            self.fail(node, ast.unparse(node), "division by zero")

        def mod(x: str) -> str:
            return f"((({x} % {b}) + {b}) % {b})"

        def floor(x: str) -> str:
            return f"(({x} - {mod(x)}) / {b})"

        expr = {"mod": lambda: mod(a), "floor": lambda: floor(a),
                "ceil": lambda: f"(0i32 - {floor(f'(0i32 - {a})')})"}[kind]()
        return expr, self.jit_int_ty(lt, rt)

    def invert(self, node: ast.UnaryOp) -> tuple[str, Ty]:
        """``~x`` on int32: ``xori`` with -1, as cuTile Python writes it."""
        e, ty = self.expr(node.operand)
        if ty.kind == "lit" and type(ty.value) is int:
            return repr(~ty.value), Ty("lit", value=~ty.value)
        if (ty.dtype if ty.kind == "tile" else ty.kind) != "i32":
            self.fail(node, ast.unparse(node), "~ is translated on int32 values only")
        shape = ty.shape if ty.kind == "tile" else ()
        a = self.int_tile(e, ty, shape, node)
        ones = self.bind(f"constant(-1i32, shape![{', '.join(shape)}])", Ty("tile", "i32", shape))[0]
        r = self.bind(f"xori({a}, {ones})", Ty("tile", "i32", shape))
        return r if shape else self.bind(f"tile_to_scalar({r[0]})", Ty("i32"))

    def int_tile(self, e: str, ty: Ty, shape: tuple, node) -> str:
        """An int32 operand as a tile of ``shape`` (a 0-d tile for a scalar)."""
        if ty.kind == "tile":
            return self.as_tile(e, ty, "i32", shape, node)
        if ty.kind == "lit":
            e = f"{ty.value}i32"
        if not shape:
            return self.bind(f"scalar_to_tile({e})", Ty("tile", "i32", ()))[0]
        return self.as_tile(e, Ty("i32") if ty.kind != "lit" else ty, "i32", shape, node)

    def arange(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.arange(n, dtype=)``: cutile's ``iota`` ``[0, 1, ..., n-1]`` (start/step are not
        translated yet)."""
        self.check_kwargs(node, {"dtype"})
        if len(node.args) != 1:
            self.fail(node, "ct.arange", "expects the size as its one positional argument")
        (n,) = self.shape_of(ast.Tuple(elts=[node.args[0]], ctx=ast.Load()))
        _, dty = self.expr(self._kw(node, "dtype"))
        if dty.kind != "dtype" or dty.dtype not in ("i32", "i64"):
            self.fail(node, "ct.arange", "dtype must be ct.int32 or ct.int64")
        return self.bind(f"iota(shape![{n}])", Ty("tile", dty.dtype, (n,)))

    def compare(self, node: ast.Compare) -> tuple[str, Ty]:
        """``a < b`` (``<= > >= == !=``) with a tile operand: cutile's ``cmpi`` (signedness from
        the element type) or ``cmpf`` (``ordered``, ``unordered`` for ``!=``, as cuTile Python),
        with Python broadcasting; a bool tile."""
        if len(node.ops) != 1:
            self.fail(node, ast.unparse(node), "chained comparisons are not translated")
        le, lt = self.expr(node.left)
        re_, rt = self.expr(node.comparators[0])
        if "dtype" in (lt.kind, rt.kind):
            return self.dtype_compare(node, lt, rt)
        pred = constructs.COMPARISONS[type(node.ops[0]).__name__]
        if "tile" not in (lt.kind, rt.kind):
            return self.scalar_compare(node, le, lt, re_, rt)
        le, re_, dtype, shape = self.broadcast_operands(le, lt, re_, rt, node)
        ty = Ty("tile", "bool", shape)
        if dtype in constructs.FLOAT_TILE_DTYPES:
            order = "Unordered" if pred == "NotEqual" else "Ordered"
            return self.bind(f"cmpf({le}, {re_}, predicate::{pred}, cmp_ordering::{order})", ty)
        return self.bind(f"cmpi({le}, {re_}, predicate::{pred})", ty)

    CMP_CALLS = {"equal": ast.Eq, "not_equal": ast.NotEq, "less": ast.Lt, "less_equal": ast.LtE,
                 "greater": ast.Gt, "greater_equal": ast.GtE}

    def compare_call(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.equal(x, y)`` (``not_equal``, ``less``, ``less_equal``, ``greater``,
        ``greater_equal``): the comparison ``x == y`` (...), which is what ``Tile.__eq__`` (...)
        calls in cuda-tile 1.7.0 (``_stub.py``: ``def __eq__(self, other): return equal(self,
        other)``): :meth:`compare`."""
        self.check_kwargs(node, set())
        name = node.func.attr
        if len(node.args) != 2:
            self.fail(node, f"ct.{name}", "expects (x, y) positionally")
        cmp = ast.copy_location(ast.Compare(left=node.args[0], ops=[self.CMP_CALLS[name]()],
                                            comparators=[node.args[1]]), node)
        return self.compare(cmp)

    RUST_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}

    def scalar_compare(self, node: ast.Compare, le, lt, re_, rt) -> tuple[str, Ty]:
        """A comparison of int32 scalars: a Rust ``bool`` (cutile's ``cmpi`` on 0-d tiles);
        of an f32 scalar with a number or another: a 0-d bool tile (``cmpf``); literals fold."""
        op = type(node.ops[0])
        if lt.kind == "lit" and rt.kind == "lit":
            v = eval(f"{lt.value!r} {self.RUST_CMP[op]} {rt.value!r}")  # noqa: S307 (two literals)
            return repr(v), Ty("lit", value=v)
        if {lt.kind, rt.kind} - {"lit"} == {"f32"}:
            # an f32 scalar (a run-time float parameter: Liger's GRPO `if delta != 0.0`): cuTile
            # Python compares 0-d tiles with cmpf, unordered for `!=`; cutile's `!=` on f32
            # scalars is always ordered (cutile-compiler-0.5.0 compile_binary_op.rs:543), so the
            # comparison is made on 0-d tiles with the ordering written out (a 0-d bool tile,
            # read as a bool by an `if`)
            if lt.kind == "f32":
                le, lt = self.bind(f"scalar_to_tile({le})", Ty("tile", "f32", ()))
            if rt.kind == "f32":
                re_, rt = self.bind(f"scalar_to_tile({re_})", Ty("tile", "f32", ()))
            le, re_, dtype, shape = self.broadcast_operands(le, lt, re_, rt, node)
            pred = constructs.COMPARISONS[op.__name__]
            order = "Unordered" if pred == "NotEqual" else "Ordered"
            return self.bind(f"cmpf({le}, {re_}, predicate::{pred}, cmp_ordering::{order})",
                             Ty("tile", "bool", shape))
        if {lt.kind, rt.kind} - {"lit"} != {"i32"}:
            self.fail(node, ast.unparse(node), f"a comparison of {lt.kind}/{rt.kind} scalars is not "
                                               f"translated (int32 or f32 only)")
        a, b = (self.scalar_as(e, t, "i32", node) for e, t in ((le, lt), (re_, rt)))
        return self.bind(f"{a} {self.RUST_CMP[op]} {b}", Ty("bool"))

    def where(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.where(cond, x, y)``: cutile's ``select`` as cuTile Python builds it (cuda-tile
        1.7.0 ``arithmetic_ops.where``): x and y promoted to their common dtype (a Python number
        takes the other operand's; two numbers their own promotion, ``where(m, 1.0, 0.0)`` is
        f32), cond, x, y each cast and broadcast to the common shape."""
        self.check_kwargs(node, set())
        if len(node.args) != 3:
            self.fail(node, "ct.where", "expects (cond, x, y)")
        ce, cty = self.expr(node.args[0])
        xe, xt = self.expr(node.args[1])
        ye, yt = self.expr(node.args[2])
        if cty.kind == "bool":
            # a comparison of int32 scalars (FlashInfer's `ct.where(idx < size, idx, oob)`):
            # cuTile Python's cmpi of two 0-d tiles, the same Tile IR value as a 0-d bool tile
            ce, cty = self.bind(f"scalar_to_tile({ce})", Ty("tile", "bool", ()))
        if cty.kind != "tile" or cty.dtype != "bool":
            self.fail(node, "ct.where", "the condition must be a bool tile (a comparison)")
        if xt.kind == yt.kind == "lit":
            dtype = promote(loose_dtype(xt.value), loose_dtype(yt.value))
        else:
            dtype = self.result_dtype(xt, yt, node)
        shape = self.broadcast_shape(cty, Ty("tile", dtype, self.broadcast_shape(xt, yt, node)), node)
        ce = self.as_tile(ce, cty, "bool", shape, node)
        xe = self.promoted(xe, xt, dtype, shape, node)
        ye = self.promoted(ye, yt, dtype, shape, node)
        return self.bind(f"select({ce}, {xe}, {ye})", Ty("tile", dtype, shape))

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
            ve, vty = self.expr(vnode)
            if vty.kind in ("i32", "f32") or (vty.kind == "tile" and vty.shape == ()):
                # a run-time fill value: cast to the dtype, then broadcast (cuTile's full)
                if vty.kind != "tile":
                    ve, vty = self.bind(f"scalar_to_tile({ve})", Ty("tile", vty.kind, ()))
                ve, vty = self.cast_tile(ve, vty, dty.dtype, node)
                return self.as_tile(ve, vty, dty.dtype, shape, node), Ty("tile", dty.dtype, shape)
            if vty.kind != "lit":
                self.fail(node, "ct.full", "fill value must be a number or a scalar")
            val = vty.value
        else:
            val = 0 if name == "zeros" else 1
        return self.constant_tile(val, dty.dtype, shape, node)

    def constant_tile(self, val, dtype: str, shape: tuple, node) -> tuple[str, Ty]:
        """A ``shape`` tile of ``dtype`` ('E', 'f32', 'i32') filled with ``val``, bit for bit
        what cuTile Python makes of it (the sign of zero, infinities, NaN, subnormals and the
        rounding of the value to the element type)."""
        sh = f"shape![{', '.join(shape)}]"
        if dtype in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
            if not (isinstance(val, int) or float(val).is_integer()):
                self.fail(node, repr(val), f"a non-integer value in an {dtype} tile")
            bits = int(dtype[1:])
            lo, hi = (-2 ** (bits - 1), 2 ** (bits - 1)) if dtype[0] == "i" else (0, 2 ** bits)
            if not lo <= int(val) < hi:         # `9223372036854775808i64` is no i64
                self.fail(node, repr(val), f"the value {int(val)} is out of range of an {dtype} tile")
            return self.bind(f"constant({int(val)}{dtype}, {sh})", Ty("tile", dtype, shape))
        if dtype == "f32":
            return self.f32_constant(val, shape)
        if dtype in ("f8e4m3fn", "f8e5m2", "tf32") and float(val) == 0.0 and math.copysign(1.0, float(val)) > 0:
            # cutile has no literal of these types; +0.0 is their ElementType::ZERO
            return self.bind(f"constant({dtype}::ZERO, {sh})", Ty("tile", dtype, shape))
        if dtype == "bool":
            if not isinstance(val, bool):
                self.fail(node, repr(val), "a non-bool value in a bool tile")
            return self.bind(f"constant({'true' if val else 'false'}, {sh})", Ty("tile", dtype, shape))
        if dtype not in ("E", "f16", "bf16"):
            self.fail(node, repr(val), f"constant of dtype {dtype} not translated")
        v = float(val)
        if v == 0.0 and math.copysign(1.0, v) > 0:
            return self.bind(f"constant({dtype}::ZERO, {sh})", Ty("tile", dtype, shape))
        # cutile has no f16/bf16 literal and no E-typed one but E::ZERO (its ElementType trait
        # has only ZERO). Where the element type is known to be 16-bit (a dtype-specialised
        # entry, or an f16/bf16 tile): the constant of its bits, bitcast to it, a constant as
        # cuTile Python's. Elsewhere an f32 constant converted to E. tileiras 13.4 folds that
        # ftof into an f16 constant but not into a bf16 one: the F2FP stays in the code, every
        # use of the value takes it from a register, not as an immediate, and a divf by it
        # no longer sees a constant numerator (tg_geglu bf16, sm_90 SASS: 6 F2FP where the
        # reference has 2; 280 instructions vs 272). So an E entry that may be bf16 is split
        # per dtype. The f32 value is exact when it already is the variant's value: known per
        # dtype-specialised entry, else checked for every dtype of the manifest (rounding v to
        # f32 first must not change its rounding to f16/bf16).
        c = self.spec.get(DTYPE_KEY) if dtype == "E" else dtype
        if c in ("f16", "bf16"):
            bits = floats.encode(v, c)
            t, _ = self.bind(f"constant({bits - (1 << 16) if bits >> 15 else bits}i16, shape![])",
                             Ty("tile", "i16", ()))
            e, ty = self.bind(f"bitcast({t})", Ty("tile", dtype, ()))
            if not shape:
                return e, ty
            return self.as_tile(e, ty, dtype, shape, node), Ty("tile", dtype, shape)
        if c is None and "bf16" in self.dtypes:
            self.need_dtype = True
        if c is not None:
            v = floats.decode(floats.encode(v, c), c)
        elif any(floats.convert(floats.encode(v, "f32"), "f32", d) != floats.encode(v, d)
                 for d in self.dtypes if d in floats.FORMATS):
            self.need_dtype = True
        # The conversion is made on a rank-0 tile, then broadcast: tileiras 13.4 does not fold
        # an ftof of a whole f32 constant tile, and the unfolded conversion kept sm_90 code from
        # hoisting the loads (tg_gelu f16: loads interleaved with stores, 22 registers; the
        # reference and this form: loads issued ahead, 38 registers, the same SASS opcode counts).
        t, _ = self.f32_constant(v, ())
        e, ty = self.bind(f"convert_tile({t})", Ty("tile", dtype, ()))
        if not shape:
            return e, ty
        return self.as_tile(e, ty, dtype, shape, node), Ty("tile", dtype, shape)

    def f32_constant(self, v: float, shape: tuple) -> tuple[str, Ty]:
        """An f32 constant tile with the bits of ``v``: a literal when finite, cutile's
        ``f32::INFINITY`` / ``f32::NEG_INFINITY`` (its constant op reads them, cutile-compiler
        0.5.0 ``dense_const_path_parts``), NaN as the bitcast of its int32 bit pattern (cutile
        has no NaN constant)."""
        sh = f"shape![{', '.join(shape)}]"
        v = float(v)
        if math.isnan(v):
            bits = floats.encode(v, "f32")
            i = bits - (1 << 32) if bits >> 31 else bits
            t, _ = self.bind(f"constant({i}i32, {sh})", Ty("tile", "i32", shape))
            return self.bind(f"bitcast({t})", Ty("tile", "f32", shape))
        if math.isinf(v):
            return self.bind(f"constant(f32::{'NEG_' if v < 0 else ''}INFINITY, {sh})",
                             Ty("tile", "f32", shape))
        return self.bind(f"constant({self.f32_lit(v)}, {sh})", Ty("tile", "f32", shape))
