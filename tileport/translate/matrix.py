"""Matrix ops: ``ct.mma(a, b, acc)`` -> cutile's ``mma`` (an ``(M, K) x (K, N) + (M, N)``
multiply-accumulate; the accumulator's type is the result's)."""
from __future__ import annotations

import ast

from .core import Ty


class MatrixRules:
    """Rules for matrix multiply-accumulate (mixed into the driver's translator)."""

    CALLS = {"mma": "mma"}

    def mma(self, node: ast.Call) -> tuple[str, Ty]:
        a, at = self.tile_expr(node.args[0])
        b, bt = self.tile_expr(node.args[1])
        c, ct_ = self.tile_expr(node.args[2] if len(node.args) > 2 else self._kw(node, "acc"))
        if len(at.shape) != 2 or len(bt.shape) != 2 or at.shape[1] != bt.shape[0]:
            self.fail(node, "ct.mma", f"operand shapes {at.shape} x {bt.shape} are not (M,K)x(K,N)")
        return self.bind(f"mma({a}, {b}, {c})", ct_)
