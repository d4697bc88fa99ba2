"""Element types: arrays of their own dtype, cuTile Python's type promotion and implicit casts,
dtypes as compile-time values (``x.dtype == ct.float32``, ``d = ct.float32 if c else x.dtype``).

An array the manifest gives a ``dtype`` of its own (an f32 LSE or Rstd beside f16 data, an
int32 index array, an int8 mask) has that element type in the entry signature
(``&Tensor<f32, {[-1]}>``), and its views, pointer tiles and loaded tiles carry it; an array
whose per-variant mapping varies with the variant dtype makes the entries split per dtype, so
that each entry knows it. ``E`` stays the variant's element type.

cuTile Python's typing rules (cuda-tile 1.7.0, ``cuda/tile/_ir/ops_utils.py``
``promote_dtypes``, ``cuda/tile/_datatype.py`` ``promote_dtypes``, ``cuda/tile/_ir/cast_ops.py``
``implicit_cast``), as the translator applies them:

* a Python number (a literal, a module constant, a local bound to one: a *loosely typed*
  scalar) takes the other operand's dtype when both are of one category (float / int / bool),
  else the stronger category's default (an int tile times ``0.5`` is an f32 tile);
* two typed operands (tiles, or scalars of a run-time parameter) promote to the common dtype
  of :func:`promote`: f16 with f32 is f32, f16 with bf16 is an error, a float with an int is the
  float, ...; each operand is cast (``astype``) to it first, then broadcast;
* ``ct.store`` / ``ct.scatter`` cast the tile to the array's dtype when that promotion is
  lossless (the common dtype of the two is the array's), else the kernel is invalid.
"""
from __future__ import annotations

import ast

from tileport.model import constructs

from .core import CONSTEXPR, DTYPE_KEY, JIT_INT, NeedConst, NeedDtype, Ty

# manifest dtype code -> Rust element type of cutile 0.5.0 (src/_core.rs `impl ElementType`)
RUST_ELEMENT = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i8": "i8", "i16": "i16",
                "i32": "i32", "i64": "i64", "u8": "u8", "u16": "u16", "u32": "u32", "u64": "u64",
                "bool": "bool", "f8e4m3fn": "f8e4m3fn", "f8e5m2": "f8e5m2", "f8e8m0fnu": "f8e8m0fnu"}
# Rust element type -> (category, bit width, signed); categories ordered as cuTile's
# NumericDTypeCategory: bool < int < float
_INFO = {"bool": (0, 1, False), "i8": (1, 8, True), "i16": (1, 16, True), "i32": (1, 32, True),
         "i64": (1, 64, True), "u8": (1, 8, False), "u16": (1, 16, False), "u32": (1, 32, False),
         "u64": (1, 64, False), "f16": (2, 16, True), "bf16": (2, 16, True), "f32": (2, 32, True),
         "f64": (2, 64, True), "tf32": (2, 32, True), "f8e4m3fn": (2, 8, True),
         "f8e5m2": (2, 8, True), "f8e8m0fnu": (2, 8, False)}
# restricted floats: cuTile refuses to promote them implicitly (cast explicitly)
_RESTRICTED = {"tf32", "f8e4m3fn", "f8e5m2", "f8e8m0fnu"}


#: an int narrowing (``ct.astype`` of an int64 tile to int32: Liger's cross-entropy narrows its
#: int64 target): cuTile Python 1.7.0 writes ``trunci`` without an overflow flag; cutile 0.5.0's
#: ``trunci`` maps ``overflow::None`` to no attribute (cutile-0.5.0 src/_core.rs:2415), which its
#: bytecode writer requires (cutile-ir-0.5.0 src/bytecode/op_writer.rs:158-160: "missing
#: attribute 'overflow' on op TruncI"); a flag it can write (no_signed_wrap) is another op
#: (poison on overflow), and an i64 -> i32 ``convert_tile`` is "not yet implemented"
#: (cutile-compiler-0.5.0 src/compiler/compile_intrinsic.rs:2111)
FLAGLESS_TRUNCI = ("narrowing {src} to {dst}: cuTile Python writes a trunci without an overflow flag, which "
                   "cutile 0.5.0 cannot write (src/_core.rs:2415 maps overflow::None to no attribute; "
                   "cutile-ir-0.5.0 src/bytecode/op_writer.rs:158-160 requires it: 'missing attribute "
                   "overflow on op TruncI'; a no_signed_wrap trunci is another op)")


class PromotionError(ValueError):
    """cuTile Python refuses to promote these dtypes implicitly."""


def promote(a: str, b: str) -> str:
    """The common dtype of two typed operands (concrete Rust element types), as cuda-tile
    1.7.0's ``promote_dtypes`` computes it (checked against its ``_promote_dtypes`` table:
    same -> same; f16 with bf16 -> error; float with float -> the wider; float with int/bool
    -> the float; signed ints -> the wider; an unsigned int with a signed one of another
    kind -> error; bool with an int -> the int). Raises :class:`PromotionError`."""
    if a == b:
        return a
    if a in _RESTRICTED or b in _RESTRICTED:
        raise PromotionError(f"implicit promotion of {a} and {b} involves a restricted float")
    (ca, wa, sa), (cb, wb, sb) = _INFO[a], _INFO[b]
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        if wa == wb:          # f16 / bf16
            raise PromotionError(f"implicit promotion of {a} and {b} is not supported")
        return a if wa > wb else b
    if ca == 1:
        if sa != sb:
            raise PromotionError(f"implicit promotion of {a} and {b} is not supported")
        return a if wa >= wb else b
    return a


def is_int_cast(src: str, dst: str) -> bool:
    """Is a cast from element type ``src`` to ``dst`` (Rust names; 'E', a float, is neither)
    one from a bool or an int to another int (exti / trunci in cuTile Python's Tile IR)?"""
    return (src in _INFO and dst in _INFO and src != dst and _INFO[src][0] <= 1
            and _INFO[dst][0] == 1)


def loose_dtype(value) -> str:
    """The dtype cuTile gives a Python number on its own (``dtype_of_constant_scalar``)."""
    if isinstance(value, bool):
        return "bool"
    return "i32" if isinstance(value, int) else "f32"


class DtypeRules:
    """Rules for element types (mixed into the driver's translator)."""

    # ct.float8_e4m3fn(0.0), ct.float32(1): a dtype called on a value
    CALLS = {name: "dtype_constructor" for name in constructs.DTYPE_ATTRS}

    def dtype_constructor(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.<dtype>(value)`` of a value known at compile time: a 0-d tile of that dtype
        holding it (cuTile Python's ``dtype_constructor``, cuda/tile/_ir/arithmetic_ops.py: a
        strictly typed constant of the value converted by the dtype category's Python type).
        Of a run-time value (an ``astype`` of a scalar) it is not translated."""
        name = node.func.attr
        self.check_kwargs(node, set())
        if len(node.args) != 1:
            self.fail(node, f"ct.{name}", "a dtype is called on one value")
        _, ty = self.expr(node.args[0])
        if ty.kind != "lit" or isinstance(ty.value, bool):
            self.fail(node, f"ct.{name}", "a dtype called on a run-time value (an astype of a "
                                          "scalar) is not translated")
        dtype = constructs.DTYPE_ATTRS[name][1]
        value = float(ty.value) if _INFO.get(dtype, (0,))[0] == 2 else ty.value
        return self.constant_tile(value, dtype, (), node)

    # ---- the element types E stands for in this entry --------------------------------
    def e_types(self) -> list[str]:
        """The concrete Rust types ``E`` takes in this entry (one when split per dtype)."""
        if DTYPE_KEY in self.spec:
            return [RUST_ELEMENT[self.spec[DTYPE_KEY]]]
        return [RUST_ELEMENT[d] for d in self.dtypes]

    def concretes(self, d: str) -> list[str]:
        """What element type ``d`` ('E' or a Rust type) is, per possible value of E."""
        return [e if d == "E" else d for e in self.e_types()]

    def decide(self, values: list, node, what: str):
        """One answer from the per-E answers ``values``; when they differ the entry must know
        E (``need_dtype``: the driver splits the entries per dtype and translates again)."""
        if len(set(values)) > 1:
            self.need_dtype = True
            raise NeedDtype(self.file, getattr(node, "lineno", self.line), what,
                            "depends on the variant dtype (the entries are split per dtype)")
        return values[0]

    def common_dtype(self, a: str, b: str, node) -> str:
        """The dtype two typed operands of element types ``a``, ``b`` ('E' or Rust types)
        promote to in this entry: 'E' when it is E for every E, else the concrete type."""
        if a == b:
            return a
        res = []
        for ca, cb in zip(self.concretes(a), self.concretes(b)):
            try:
                res.append(promote(ca, cb))
            except PromotionError as exc:
                self.fail(node, ast.unparse(node)[:80], f"{exc} (cuTile Python asks for an explicit cast)")
        other = b if a == "E" else a if b == "E" else None
        if other is not None and all(r == other for r in res):
            # E of an entry that knows it meets its own type (an f32 accumulator += a tile of
            # an f32 entry's E): the concrete type, so a loop-carried value keeps its type
            return other
        if "E" in (a, b) and all(r == e for r, e in zip(res, self.e_types())):
            return "E"
        return self.decide(res, node, ast.unparse(node)[:80])

    def dtype_of(self, ty: Ty) -> str | None:
        """Element type of a typed value (tile or run-time scalar); None for a loose literal."""
        if ty.kind == "tile":
            return ty.dtype
        if ty.kind in ("i32", "f32", "bool"):
            return ty.kind
        return None

    def result_dtype(self, lt: Ty, rt: Ty, node) -> str:
        """The element type of ``l op r``, cuTile's promotion with loosely typed Python
        numbers. An int constexpr kept as a const generic is loosely typed in cuTile Python:
        where that gives another type than an int32 would (beside a float or a narrow int),
        its value is asked for (:class:`NeedConst`)."""
        for a, b in ((lt, rt), (rt, lt)):
            if a.kind == "i32" and isinstance(a.value, str) and a.value.startswith(CONSTEXPR + ":"):
                other = self.dtype_of(b) or loose_dtype(b.value)
                if other not in ("i32", "bool"):
                    name = a.value.split(":", 1)[1]
                    raise NeedConst(self.file, getattr(node, "lineno", self.line), name,
                                    "a constexpr mixed with a non-int32 value is folded as a Python number")
            if a.kind == "i32" and isinstance(a.value, str) and a.value.startswith(JIT_INT + ":"):
                # arithmetic on int constexprs (``N = CHANNELS_PER_GROUP * TOTAL_HIDDEN_SIZE``
                # then ``1.0 / N``, Liger's GroupNorm) is a Python int in cuTile Python, folded
                # with the float: the entries are specialised on each constexpr it reads
                other = self.dtype_of(b) or loose_dtype(b.value)
                names = [n for n in a.value.split(":", 1)[1].split(",") if n]
                if other not in ("i32", "bool") and names:
                    raise NeedConst(self.file, getattr(node, "lineno", self.line), names[0],
                                    "arithmetic on constexprs mixed with a non-int32 value is folded "
                                    "as a Python number")
        da, db = self.dtype_of(lt), self.dtype_of(rt)
        if da is not None and db is not None:
            return self.common_dtype(da, db, node)
        typed, loose = (da, rt) if da is not None else (db, lt)
        cat = _INFO[loose_dtype(loose.value)][0]
        res = [t if _INFO[t][0] >= cat else loose_dtype(loose.value) for t in self.concretes(typed)]
        if typed == "E" and all(r == e for r, e in zip(res, self.e_types())):
            return "E"
        return self.decide(res, node, ast.unparse(node)[:80])

    # ---- casts -----------------------------------------------------------------------
    def cast_tile(self, e: str, ty: Ty, dst: str, node) -> tuple[str, Ty]:
        """``astype(t, dst)`` as cuTile Python emits it for an implicit cast: nothing when the
        types agree in this entry; cutile's ``convert_tile`` otherwise (``ftof`` round to
        nearest even between floats, ``itof`` with the source's signedness, ``ftoi`` toward
        zero; nothing in the IR where E turns out to be ``dst``), ``exti`` / ``trunci`` between
        ints, ``exti`` (unsigned) from bool to an int (cutile's convert has no rule for
        either)."""
        src = ty.dtype
        if src == dst:
            return e, ty
        out = Ty("tile", dst, ty.shape)
        kinds = {(_INFO[a][0], _INFO[b][0]) for a, b in zip(self.concretes(src), self.concretes(dst))}
        if kinds == {(1, 1)}:
            widths = {(_INFO[a][1], _INFO[b][1]) for a, b in zip(self.concretes(src), self.concretes(dst))}
            (ws, wd), = widths
            if ws < wd:
                sign = "" if _INFO[self.concretes(src)[0]][2] else ", signedness::Unsigned"
                if sign:
                    self.fail(node, ast.unparse(node)[:80], f"widening the unsigned {src} to {dst} "
                                                            f"is not translated")
                return self.bind(f"exti({e})", out)
            if ws > wd:
                # cuTile Python narrows with a flagless trunci, which cutile 0.5.0 cannot write
                self.fail(node, ast.unparse(node)[:80], FLAGLESS_TRUNCI.format(src=src, dst=dst))
            return self.bind(f"bitcast({e})", out)
        if kinds == {(0, 1)}:
            # bool -> int: cuTile Python zero-extends (exti unsigned); cutile's exti infers the
            # signedness from the source type, unsigned for bool (cutile-compiler 0.5.0
            # compiler/utils.rs rust_int_signedness)
            return self.bind(f"exti({e})", out)
        if any(0 in k for k in kinds) and kinds != {(0, 0)}:
            self.fail(node, ast.unparse(node)[:80], f"an implicit cast between {src} and {dst} "
                                                    f"(bool) is not translated")
        return self.bind(f"convert_tile({e})", out)

    def implicit_cast(self, e: str, ty: Ty, dst: str, node, what: str) -> tuple[str, Ty]:
        """The implicit cast of ``ct.store`` / ``ct.scatter`` / a padding value: allowed when
        promoting the value's dtype with ``dst`` gives ``dst`` for every E of this entry
        (cuda-tile's ``_is_implicit_cast_ok``), else the kernel is invalid for some variant."""
        for s, d in zip(self.concretes(ty.dtype), self.concretes(dst)):
            try:
                ok = promote(s, d) == d
            except PromotionError:
                ok = False
            if not ok:
                self.fail(node, what, f"a {s} tile cannot be cast implicitly to the array's {d} "
                                      f"(cuTile Python rejects it too): cast with ct.astype first")
        return self.cast_tile(e, ty, dst, node)

    # ---- dtypes as compile-time values ----------------------------------------------
    def dtype_compare(self, node: ast.Compare, lt: Ty, rt: Ty) -> tuple[str, Ty]:
        """``a.dtype == ct.float32`` (``!=``, ``is``, ``is not``): a compile-time bool (the
        entries split per dtype when the answer depends on E)."""
        op = type(node.ops[0])
        if lt.kind != "dtype" or rt.kind != "dtype" or op not in (ast.Eq, ast.NotEq, ast.Is, ast.IsNot):
            self.fail(node, ast.unparse(node), "only == / != between two dtypes is translated")
        same = [a == b for a, b in zip(self.concretes(lt.dtype), self.concretes(rt.dtype))]
        v = self.decide(same, node, ast.unparse(node))
        v = v if op in (ast.Eq, ast.Is) else not v
        return repr(v), Ty("lit", value=v)

    def bool_op(self, node) -> tuple[str, Ty]:
        """``a and b`` / ``a or b`` / ``not a``, as cuTile Python lowers them (cuda-tile 1.7.0
        ``ast2hir._boolop_expr``): left to right, a compile-time operand short-circuits (folded:
        ``False and x`` is ``False`` and ``x`` is not translated; ``True and x`` is ``x``); a
        run-time bool ``c`` is an ``if`` yielding the rest or ``c`` itself (``c and r`` is
        ``if c { r } else { c }``, ``c or r`` is ``if c { c } else { r }``). ``not`` only of a
        compile-time value."""
        if isinstance(node, ast.UnaryOp):
            _, ty = self.expr(node.operand)
            if ty.kind != "lit":
                self.fail(node, ast.unparse(node), "`not` of a run-time value is not translated")
            return repr(not ty.value), Ty("lit", value=not ty.value)
        return self.bool_chain(node, node.values)

    def bool_chain(self, node, values) -> tuple[str, Ty]:
        """``values[0] <op> values[1] <op> ...`` of :meth:`bool_op` (``node.op`` the operator)."""
        is_and = isinstance(node.op, ast.And)
        c, ty = self.condition(values[0])
        if ty.kind == "lit":
            if len(values) == 1 or bool(ty.value) != is_and:
                return repr(ty.value), ty           # the last operand, or a short-circuit
            return self.bool_chain(node, values[1:])
        if len(values) == 1:
            return c, ty
        if ty.kind != "bool":
            self.fail(node, ast.unparse(node)[:80], f"`and` / `or` of a run-time {ty.kind}: only "
                                                    f"bool scalars (comparisons) are translated")
        head = self.out.emit("", self.line)
        self.out.indent += 1
        if not is_and:
            self.out.emit(f"{c}", self.line)
            self.out.indent -= 1
            self.out.emit("} else {", self.line)
            self.out.indent += 1
        r, rty = self.bool_chain(node, values[1:])
        if rty.kind == "lit":
            r = "true" if rty.value else "false"
        elif rty.kind != "bool":
            self.fail(node, ast.unparse(node)[:80], f"`and` / `or` of a run-time {rty.kind}: only "
                                                    f"bool scalars (comparisons) are translated")
        self.out.emit(f"{r}", self.line)
        self.out.indent -= 1
        if is_and:
            self.out.emit("} else {", self.line)
            self.out.indent += 1
            self.out.emit(f"{c}", self.line)
            self.out.indent -= 1
        name = self.fresh("t")
        self.out.lines[head][1] = f"let {name}: bool = if {c} {{"
        self.out.emit("};", self.line)
        return name, Ty("bool")
