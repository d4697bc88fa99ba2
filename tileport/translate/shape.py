"""Shape ops: ``ct.reshape``, ``ct.expand_dims`` / ``x[:, None]``, ``ct.broadcast_to``,
``ct.permute`` / ``ct.transpose``, ``ct.extract``, ``ct.cat``, and Python broadcasting made
explicit.

Python broadcasting becomes explicit ``reshape`` (leading unit dimensions) and ``broadcast``;
a scalar operand of a tile operation becomes ``broadcast_scalar``. Each op is the one cuTile
Python emits (cuda-tile 1.7.0): a new unit axis is a ``reshape``, a transpose a ``permute``.
"""
from __future__ import annotations

import ast
import math
import re

from tileport.model import constructs

from .core import Ty

# a Rust name or literal (`row`, `7i32`, `-0.5f32`, `1e-06f32`): splatted as it is
_PLAIN = re.compile(r"[A-Za-z_]\w*|-?\d[\w.]*(?:[eE][+-]?\d+\w*)?")


class ShapeRules:
    """Rules for tile shapes (mixed into the driver's translator)."""

    CALLS = {"reshape": "reshape", "expand_dims": "expand_dims", "broadcast_to": "broadcast_to",
             "permute": "permute", "transpose": "transpose", "extract": "extract", "cat": "cat",
             "item": "item"}

    def item(self, node: ast.Call) -> tuple[str, Ty]:
        """``t.item()``: ``t.reshape(())`` (cuda/tile/_stub.py ``Tile.item``), a 0-d tile; one of
        int32 / f32 is that scalar (cutile's ``tile_to_scalar`` emits no op), usable as an index
        or a loop bound."""
        self.check_kwargs(node, set())
        if len(node.args) != 1:
            self.fail(node, ast.unparse(node), "item() takes no arguments")
        e, ty = self.expr(node.args[0])
        if ty.kind in ("i32", "f32"):
            # already that scalar: a gather at a scalar index (``ct.gather(r, row).item()``,
            # Liger's RMSNorm backward) is a 0-d tile, which this translator holds as one
            return e, ty
        if ty.kind != "tile":
            self.fail(node.args[0], ast.unparse(node.args[0]), f"expected a tile, got {ty.kind}")
        if any(d != "1" for d in ty.shape):
            self.fail(node, ast.unparse(node), f"item() of a tile of shape {ty.shape}: only a tile of "
                                               f"one element (all axes 1) has one")
        if ty.shape:
            e, ty = self.bind(f"{e}.reshape(shape![])", Ty("tile", ty.dtype, ()))
        if ty.dtype in ("i32", "f32"):
            return self.bind(f"tile_to_scalar({e})", Ty(ty.dtype))
        return e, ty

    def expand_dims(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.expand_dims(x, axis)``: a unit axis inserted at ``axis`` (a ``reshape``)."""
        self.check_kwargs(node, {"axis"})
        e, ty = self.tile_expr(node.args[0])
        axis = self.static_int(self._kw(node, "axis", 1), "axis")
        n = len(ty.shape) + 1
        if not -n <= axis < n:
            self.fail(node, ast.unparse(node), f"axis {axis} out of range for a rank-{n} result")
        axis %= n
        shape = ty.shape[:axis] + ("1",) + ty.shape[axis:]
        return self.bind(f"{e}.reshape(shape![{', '.join(shape)}])", Ty("tile", ty.dtype, shape))

    def subscript(self, node: ast.Subscript) -> tuple[str, Ty]:
        """``x[:, None]``, ``x[None, :, :]`` ...: new unit axes where ``None`` stands, every
        other entry a full slice ``:`` (a ``reshape``, as ``ct.expand_dims``)."""
        e, ty = self.tile_expr(node.value)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        shape, k = [], 0
        for s in elts:
            if isinstance(s, ast.Constant) and s.value is None:
                shape.append("1")
            elif isinstance(s, ast.Slice) and s.lower is None and s.upper is None and s.step is None:
                if k >= len(ty.shape):
                    self.fail(node, ast.unparse(node), f"more axes than the tile's {len(ty.shape)}")
                shape.append(ty.shape[k])
                k += 1
            else:
                self.fail(node, ast.unparse(node), "only `:` and `None` subscripts of a tile are "
                                                   "translated (new unit axes)")
        shape += list(ty.shape[k:])
        if tuple(shape) == ty.shape:
            return e, ty
        return self.bind(f"{e}.reshape(shape![{', '.join(shape)}])", Ty("tile", ty.dtype, tuple(shape)))

    def broadcast_to(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.broadcast_to(x, shape)`` with NumPy's rule (leading unit axes, then
        ``broadcast``)."""
        self.check_kwargs(node, {"shape"})
        e, ty = self.expr(node.args[0])
        shape = self.shape_of(self._kw(node, "shape", 1))
        if ty.kind != "tile":
            self.fail(node, ast.unparse(node), "broadcast_to of a scalar is not translated")
        if self.broadcast_shape(ty, Ty("tile", ty.dtype, shape), node) != shape:
            self.fail(node, ast.unparse(node), f"cannot broadcast {ty.shape} to {shape}")
        return self.as_tile(e, ty, ty.dtype, shape, node), Ty("tile", ty.dtype, shape)

    def permute(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.permute(x, axes)``: cutile's ``permute`` with the permutation as a const array."""
        self.check_kwargs(node, {"axes"})
        e, ty = self.tile_expr(node.args[0])
        axes_node = self._kw(node, "axes", 1)
        if not isinstance(axes_node, ast.Tuple):
            self.fail(node, ast.unparse(node), "axes must be a tuple")
        axes = [self.static_int(a, "a permutation entry") % max(1, len(ty.shape)) for a in axes_node.elts]
        return self.permuted(e, ty, axes, node)

    def transpose(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.transpose(x)`` (rank 2) / ``ct.transpose(x, a0, a1)``: a ``permute`` swapping
        two axes."""
        self.check_kwargs(node, {"axis0", "axis1"})
        e, ty = self.tile_expr(node.args[0])
        n = len(ty.shape)
        a0, a1 = self._kw(node, "axis0", 1), self._kw(node, "axis1", 2)
        if a0 is None and a1 is None:
            if n != 2:
                self.fail(node, ast.unparse(node), "transpose without axes needs a rank-2 tile")
            i, j = 0, 1
        elif a0 is None or a1 is None:
            self.fail(node, ast.unparse(node), "give both axes or neither")
        else:
            i, j = (self.static_int(a, "an axis") % n for a in (a0, a1))
        axes = list(range(n))
        axes[i], axes[j] = axes[j], axes[i]
        return self.permuted(e, ty, axes, node)

    def permuted(self, e: str, ty: Ty, axes: list, node) -> tuple[str, Ty]:
        if sorted(axes) != list(range(len(ty.shape))):
            self.fail(node, ast.unparse(node), f"{axes} is not a permutation of the tile's axes")
        shape = tuple(ty.shape[a] for a in axes)
        return self.bind(f"permute({e}, const_array![{', '.join(map(str, axes))}])",
                         Ty("tile", ty.dtype, shape))

    def extract(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.extract(x, index, shape)``: the ``index``-th ``shape`` subtile (cutile's
        ``extract`` with each index as a 0-d int32 tile)."""
        self.check_kwargs(node, {"index", "shape"})
        e, ty = self.tile_expr(node.args[0])
        idx_node, shp_node = self._kw(node, "index", 1), self._kw(node, "shape", 2)
        shape = self.shape_of(shp_node)
        elts = idx_node.elts if isinstance(idx_node, ast.Tuple) else [idx_node]
        if len(elts) != len(ty.shape) or len(shape) != len(ty.shape):
            self.fail(node, ast.unparse(node), "index and shape must have the tile's rank")
        idx = []
        for i in elts:
            ie = self.int_expr(i)
            idx.append(self.bind(f"scalar_to_tile({ie})", Ty("tile", "i32", ()))[0])
        return self.bind(f"extract({e}, [{', '.join(idx)}])", Ty("tile", ty.dtype, shape))

    def cat(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.cat((a, b), axis)``: cutile's ``cat`` of two tiles."""
        self.check_kwargs(node, {"axis"})
        tiles = node.args[0] if node.args else None
        if not (isinstance(tiles, ast.Tuple) and len(tiles.elts) == 2):
            self.fail(node, ast.unparse(node), "cat of a tuple of two tiles is translated")
        (a, at), (b, bt) = (self.tile_expr(t) for t in tiles.elts)
        axis = self.static_int(self._kw(node, "axis", 1), "axis") % len(at.shape)
        if at.dtype != bt.dtype or len(at.shape) != len(bt.shape) or any(
                x != y for k, (x, y) in enumerate(zip(at.shape, bt.shape)) if k != axis):
            self.fail(node, ast.unparse(node), f"cannot concatenate {at.shape} and {bt.shape} on axis {axis}")
        try:
            size = str(int(at.shape[axis]) + int(bt.shape[axis]))
        except ValueError:
            self.fail(node, ast.unparse(node), "the concatenated axis must have literal sizes "
                                               "(constexpr sizes are specialised when computed with)")
        shape = at.shape[:axis] + (size,) + at.shape[axis + 1:]
        return self.bind(f"cat({a}, {b}, {axis}i32)", Ty("tile", at.dtype, shape))

    def reshape(self, node: ast.Call) -> tuple[str, Ty]:
        e, ty = self.tile_expr(node.args[0])
        shape = self.shape_of(node.args[1] if len(node.args) > 1 else self._kw(node, "shape"))
        return self.bind(f"{e}.reshape(shape![{', '.join(shape)}])", Ty("tile", ty.dtype, shape))

    def broadcast_operands(self, le: str, lt: Ty, re_: str, rt: Ty, node) -> tuple[str, str, str, tuple]:
        """Two operands, at least one a tile, promoted to their common dtype (cuTile Python's
        rules: :mod:`.dtypes`; a Python number takes the tile's element type) and broadcast to
        their common shape, cast first, as cuTile Python does. Returns (left, right, element
        type, shape)."""
        dtype = self.result_dtype(lt, rt, node)
        shape = self.broadcast_shape(lt, rt, node)
        return (self.promoted(le, lt, dtype, shape, node), self.promoted(re_, rt, dtype, shape, node),
                dtype, shape)

    def promoted(self, e: str, ty: Ty, dtype: str, shape: tuple, node) -> str:
        """One operand cast to ``dtype`` (a typed scalar of another type as a 0-d tile), then
        broadcast to ``shape``."""
        if ty.kind in ("i32", "f32", "bool") and ty.kind != dtype:
            e, ty = self.bind(f"scalar_to_tile({e})", Ty("tile", ty.kind, ()))
        if ty.kind == "tile" and ty.dtype != dtype:
            if e in self.muls:
                # a float product promoted for an add (`acc_f32 += t * t`, t of the variant's
                # dtype): where E is already `dtype` there is no cast and cuTile Python contracts
                # the add into an fma, elsewhere the cast keeps them apart -- one entry per dtype
                same = self.decide([s == d for s, d in zip(self.concretes(ty.dtype), self.concretes(dtype))],
                                   node, "an implicit cast of a product (whether it contracts into an fma)")
                if same:
                    return self.as_tile(*self.product_as(e, ty, dtype, node), dtype, shape, node)
            e, ty = self.cast_tile(e, ty, dtype, node)
        return self.as_tile(e, ty, dtype, shape, node)

    def product_as(self, e: str, ty: Ty, dtype: str, node) -> tuple[str, Ty]:
        """The pending float product ``e`` (in ``self.muls``) retyped as ``dtype``, the same
        element type in this entry (E of an f32 entry as f32): its factors are converted (no
        op in the Tile IR) and the product is made again of them, still open to fma
        contraction, as cuTile Python sees one f32 product there. A product read elsewhere
        too (no contraction either way) is just converted."""
        a, b, idx, uses, fl = self.muls[e]
        if uses not in (None, 1) or e in self.carried_products:
            # (a loop-carried name's product is not made again: its assignment reads the temporary)
            return self.cast_tile(e, ty, dtype, node)
        self.out.lines[idx][1] = None          # the product is made again below
        del self.muls[e]
        fty = Ty("tile", ty.dtype, ty.shape)
        ca = self.cast_tile(a, fty, dtype, node)[0]
        cb = ca if b == a else self.cast_tile(b, fty, dtype, node)[0]
        out = Ty("tile", dtype, ty.shape)
        if fl == self.DEFAULT_FLAGS:
            p = self.bind(f"{ca} * {cb}", out)[0]
        else:
            p = self.bind(f"mulf({ca}, {cb}, rounding::{fl[0]}, ftz::{fl[1]})", out)[0]
        self.muls[p] = (ca, cb, len(self.out.lines) - 1, None, fl)
        return p, out

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
        if ty.kind == "lit":
            # a Python scalar takes the tile's element type (cuTile Python's weak scalars)
            if dtype in ("E", "f16", "bf16"):
                return self.constant_tile(ty.value, dtype, shape, node)[0]
            if dtype in ("f8e4m3fn", "f8e5m2"):
                # an fp8 tile takes a Python number as cuTile Python does (padding_value=0 of
                # Unsloth's weight_dequant): constant_tile writes +0 as the type's ZERO and
                # refuses any other value (cutile 0.5.0 has no fp8 literal)
                return self.constant_tile(ty.value, dtype, shape, node)[0]
            if dtype == "f32" and not math.isfinite(ty.value):
                return self.f32_constant(ty.value, shape)[0]       # inf / NaN: a constant tile
            if dtype == "f32":
                e = self.f32_lit(ty.value)
            elif dtype == "f64" and math.isfinite(ty.value):
                # cutile reads an f64 literal's decimal as the f64 Python holds (cutile-compiler
                # 0.5.0 encode_literal_bytes: F64 -> parse_float_or_hex(..).to_le_bytes())
                e = f"{float(ty.value)!r}f64"
            elif dtype in ("i32", "i64") and isinstance(ty.value, int) and not isinstance(ty.value, bool):
                bits = 32 if dtype == "i32" else 64
                if not -2 ** (bits - 1) <= ty.value < 2 ** (bits - 1):
                    # `2147483648i32` is no i32: refused here, not left to rustc or wrapped
                    self.fail(node, ast.unparse(node), f"the int {ty.value} is out of range of the {dtype} "
                                                       f"tile it is mixed with")
                e = f"{ty.value}{dtype}"
            else:
                self.fail(node, ast.unparse(node), f"the scalar {ty.value!r} mixed with a {dtype} tile "
                                                   "is not translated")
        elif ty.kind == "i32" and dtype in constructs.FLOAT_TILE_DTYPES:
            self.fail(node, ast.unparse(node), "an int scalar mixed with a float tile is not "
                                               "translated (no int-to-float scalar rule yet)")
        elif ty.kind != dtype:
            self.fail(node, ast.unparse(node), f"a {ty.kind} scalar mixed with a {dtype} tile; cast "
                                               f"one of them first")
        if ty.kind in ("i32", "f32", "bool") and not _PLAIN.fullmatch(e):
            # an expression is bound to a typed scalar first: cutile 0.5.0 compiles a
            # broadcast_scalar argument without an expected type, so in `row * (H * S)` the
            # folded constant `H * S` takes the type of `row` (a rank-0 tile after
            # tile_to_scalar) and fails ("expected a scalar element type")
            e = self.bind(e, Ty(ty.kind), "s")[0]
        return self.bind(f"broadcast_scalar({e}, {sh})", Ty("tile", dtype, shape))[0]
