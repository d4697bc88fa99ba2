"""Shape ops: ``ct.reshape`` and Python broadcasting made explicit.

Python broadcasting becomes explicit ``reshape`` (leading unit dimensions) and ``broadcast``;
a scalar operand of a tile operation becomes ``broadcast_scalar``.
"""
from __future__ import annotations

import ast
import math

from .. import constructs as C
from .core import Ty


class ShapeRules:
    """Rules for tile shapes (mixed into the driver's translator)."""

    CALLS = {"reshape": "reshape"}

    def reshape(self, node: ast.Call) -> tuple[str, Ty]:
        e, ty = self.tile_expr(node.args[0])
        shape = self.shape_of(node.args[1] if len(node.args) > 1 else self._kw(node, "shape"))
        return self.bind(f"{e}.reshape(shape![{', '.join(shape)}])", Ty("tile", ty.dtype, shape))

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
            if dtype == "E":
                return self.constant_tile(ty.value, "E", shape, node)[0]
            if dtype == "f32" and not math.isfinite(ty.value):
                return self.f32_constant(ty.value, shape)[0]       # inf / NaN: a constant tile
            if dtype == "f32":
                e = self.f32_lit(ty.value)
            elif dtype in ("i32", "i64") and isinstance(ty.value, int) and not isinstance(ty.value, bool):
                e = f"{ty.value}{dtype}"
            else:
                self.fail(node, ast.unparse(node), f"the scalar {ty.value!r} mixed with a {dtype} tile "
                                                   "is not translated")
        elif ty.kind == "i32" and dtype in C.FLOAT_TILE_DTYPES:
            self.fail(node, ast.unparse(node), "an int scalar mixed with a float tile is not "
                                               "translated (no int-to-float scalar rule yet)")
        elif ty.kind != dtype:
            self.fail(node, ast.unparse(node), f"a {ty.kind} scalar mixed with a {dtype} tile; cast "
                                               f"one of them first")
        return self.bind(f"broadcast_scalar({e}, {sh})", Ty("tile", dtype, shape))[0]
