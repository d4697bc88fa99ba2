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
