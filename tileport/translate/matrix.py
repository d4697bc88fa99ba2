"""Matrix ops: ``ct.mma(a, b, acc)`` -> cutile's ``mma`` (an ``(M, K) x (K, N) + (M, N)``
multiply-accumulate; the accumulator's type is the result's); ``ct.matmul(a, b)`` / ``a @ b``
of 2-D tiles -> a zero accumulator of the operands' default accumulator type, ``mma``, and
the cast back to the operands' (promoted) type, as cuTile Python's ``matmul_impl`` builds it
(cuda/tile/_ir/ops.py; the accumulator type is the first of ``_mma_supported_dtypes`` in
cuda/tile/_datatype.py: f16 and the f8 types accumulate in f16, bf16 / f32 / tf32 in f32, f64
in f64, int8 / uint8 in int32)."""
from __future__ import annotations

import ast

from .core import NeedConst, Ty

# operand element type -> the accumulator ct.matmul uses (cuda-tile's _mma_supported_dtypes)
MATMUL_ACC = {"f8e4m3fn": "f16", "f8e5m2": "f16", "f16": "f16", "bf16": "f32", "f32": "f32",
              "tf32": "f32", "f64": "f64", "i8": "i32", "u8": "i32"}


class MatrixRules:
    """Rules for matrix multiply-accumulate (mixed into the driver's translator)."""

    CALLS = {"mma": "mma", "matmul": "matmul"}

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
        batched = self.batched(at, bt, node, "ct.mma")
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
        return self.bind(f"{self.mma_fn(at, batched, node)}({a}, {b}, {c})", ct_)

    def batched(self, at: Ty, bt: Ty, node, what: str) -> bool:
        """Are the operands of an mma / matmul ``(B, M, K) x (B, K, N)`` (True) or
        ``(M, K) x (K, N)`` (False)? Anything else is refused."""
        if len(at.shape) == len(bt.shape) == 2:
            self.fold_unequal_dims([(at.shape[1], bt.shape[0])], node)
            if at.shape[1] == bt.shape[0]:
                return False
        if len(at.shape) == len(bt.shape) == 3:
            self.fold_unequal_dims([(at.shape[0], bt.shape[0]), (at.shape[2], bt.shape[1])], node)
            if at.shape[0] == bt.shape[0] and at.shape[2] == bt.shape[1]:
                return True
        self.fail(node, what, f"operand shapes {at.shape} x {bt.shape} are not (M,K)x(K,N) "
                              f"or (B,M,K)x(B,K,N)")

    def fold_unequal_dims(self, pairs: list, node) -> None:
        """Dimensions an mma contracts (or batches) over that two different int constexprs
        give, kept as two const generics (``(BLOCK_D, LOAD_BLOCK_N) x (BLOCK_N, BLOCK_H)``,
        FlashInfer's paged decode with LOAD_BLOCK_N = BLOCK_N): cuTile Python folds every
        constexpr, so the shapes agree wherever the values do, but two Rust const generics never
        unify. Raises :class:`NeedConst` for the first such constexpr, so the driver specialises
        the entries on it (its dims become int literals that compare by value); literal dims
        that still differ are left to the caller's refusal."""
        names = {self.rname(p["name"]): p["name"] for p in self.params
                 if p["kind"] == "constexpr" and p["name"] not in self.spec}
        for x, y in pairs:
            for d in (x, y) if x != y else ():
                if d in names:
                    raise NeedConst(self.file, getattr(node, "lineno", self.line), names[d],
                                    "an mma dimension given by two different constexprs")

    def mma_fn(self, at: Ty, batched: bool, node) -> str:
        """cutile's op for an mma: ``mma`` (rank 2 only: ``Tile<E1, {[M, K]}>``) or, batched,
        ``mmaf`` (cutile 0.5.0 ``_core.rs``: ``cuda_tile.mmaf`` with ``variadic_op(N = 3)``, the
        op cuTile Python's batched ``ct.mma`` emits) for float operands; a batched integer mma
        (``mmai`` takes signedness markers) is not translated."""
        if not batched:
            return "mma"
        if any(d.startswith(("i", "u")) for d in self.concretes(at.dtype)):
            self.fail(node, "ct.mma", "a batched integer mma is not translated")
        return "mmaf"

    def matmul(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.matmul(a, b)`` of an (M, K) and a (K, N) tile: an (M, N) tile of the operands'
        common dtype, or of (B, M, K) and (B, K, N) tiles a (B, M, N) one (1-D operands and
        broadcast batches are not translated)."""
        self.check_kwargs(node, set())
        if len(node.args) != 2:
            self.fail(node, "ct.matmul", "expects two tiles, positionally")
        a, at = self.tile_expr(node.args[0])
        b, bt = self.tile_expr(node.args[1])
        if len(at.shape) not in (2, 3) or len(bt.shape) != len(at.shape):
            self.fail(node, "ct.matmul", f"operands of rank {len(at.shape)} and {len(bt.shape)}: only "
                                         f"2-D x 2-D and 3-D x 3-D are translated (1-D and "
                                         f"broadcast batches are not)")
        batched = self.batched(at, bt, node, "ct.matmul")
        common = self.common_dtype(at.dtype, bt.dtype, node)
        a, at = self.cast_tile(a, at, common, node)
        b, bt = self.cast_tile(b, bt, common, node)
        accs = []
        for d in self.concretes(common):
            if d not in MATMUL_ACC:
                self.fail(node, "ct.matmul", f"a {d} operand: cuTile Python has no matmul of it")
            accs.append(MATMUL_ACC[d])
        acc = common if accs == self.concretes(common) else self.decide(accs, node, "ct.matmul")
        shape = (at.shape[0], at.shape[1], bt.shape[2]) if batched else (at.shape[0], bt.shape[1])
        zero, zty = self.constant_tile(0 if acc.startswith(("i", "u")) else 0.0, acc, shape, node)
        r, rty = self.bind(f"{self.mma_fn(at, batched, node)}({a}, {b}, {zero})", zty)
        return self.cast_tile(r, rty, common, node)
