"""Reductions: ``ct.sum/max/min/prod(t, axis=, keepdims=)`` -> cutile's ``reduce_*``
(``keepdims=True`` reshapes the result back to the input's rank with a unit axis)."""
from __future__ import annotations

import ast

from .. import constructs as C
from .core import Ty


class ReductionRules:
    """Rules for reductions (mixed into the driver's translator)."""

    CALLS = {n: "reduction" for n in C.REDUCTIONS}

    def reduction(self, node: ast.Call) -> tuple[str, Ty]:
        name = node.func.attr
        self.check_kwargs(node, {"axis", "keepdims"})
        e, ty = self.tile_expr(node.args[0])
        axis_node = self._kw(node, "axis", 1)
        if axis_node is None or (isinstance(axis_node, ast.Constant) and axis_node.value is None):
            self.fail(node, f"ct.{name}", "axis must be an int known at compile time (reductions "
                                          "over all axes are not translated)")
        axis = self.static_int(axis_node, "axis")
        if not -len(ty.shape) <= axis < len(ty.shape):
            self.fail(node, f"ct.{name}", f"axis {axis} out of range for a rank-"
                                          f"{len(ty.shape)} tile")
        ax = axis % len(ty.shape)
        kd = self._kw(node, "keepdims")
        keep = kd is not None and self.const_value(kd) is True
        red = tuple(d for i, d in enumerate(ty.shape) if i != ax)
        r, rty = self.bind(f"{C.REDUCTIONS[name]}({e}, {ax})", Ty("tile", ty.dtype, red))
        if keep:
            kept = tuple("1" if i == ax else d for i, d in enumerate(ty.shape))
            return self.bind(f"{r}.reshape(shape![{', '.join(kept)}])", Ty("tile", ty.dtype, kept))
        return r, rty
