"""Matrix ops: ``ct.mma(a, b, acc)`` -> cutile's ``mma`` (an ``(M, K) x (K, N) + (M, N)``
multiply-accumulate; the accumulator's type is the result's)."""
from __future__ import annotations

import ast

from .core import Ty


class MatrixRules:
    """Rules for matrix multiply-accumulate (mixed into the driver's translator)."""

    CALLS = {"mma": "mma"}

    def mma(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.mma(a, b, acc)``. cuTile Python requires ``a`` and ``b`` of one dtype (but for
        int8 with uint8: cuda-tile 1.7.0 ``_resolve_mma_supported_dtype``), and so does cutile
        0.5.0's ``mma`` (``lhs: Tile<E1, ..>, rhs: Tile<E1, ..>``). Where one operand has the
        entry's element type ``E`` and the other a concrete type that ``E`` is in every variant
        of the entry (``ct.astype(p, ct.float16)`` times an f16 array's tile), the concrete one is
        converted to ``E``: a ``convert_tile`` between equal types, which cutile emits as no op.
        Operands of different dtypes in some variant are the kernel's error (cuTile Python
        rejects them too)."""
        a, at = self.tile_expr(node.args[0])
        b, bt = self.tile_expr(node.args[1])
        c, ct_ = self.tile_expr(node.args[2] if len(node.args) > 2 else self._kw(node, "acc"))
        if len(at.shape) != 2 or len(bt.shape) != 2 or at.shape[1] != bt.shape[0]:
            self.fail(node, "ct.mma", f"operand shapes {at.shape} x {bt.shape} are not (M,K)x(K,N)")
        if at.dtype != bt.dtype:
            ca, cb = self.concretes(at.dtype), self.concretes(bt.dtype)
            if ca != cb:
                x, y = next((x, y) for x, y in zip(ca, cb) if x != y)
                why = ("is not translated (cutile 0.5.0's mma takes operands of one element type)"
                       if {x, y} == {"i8", "u8"} else "is invalid (ct.mma requires one dtype)")
                self.fail(node, "ct.mma", f"an mma of {x} with {y} {why}")
            if "E" in (at.dtype, bt.dtype):
                if at.dtype == "E":
                    b, bt = self.cast_tile(b, bt, "E", node)
                else:
                    a, at = self.cast_tile(a, at, "E", node)
        return self.bind(f"mma({a}, {b}, {c})", ct_)
