"""Values, types and the expression walk every construct family builds on.

:class:`TranslatorBase` holds one entry's translation state (scopes of Python names, the
emitted Rust lines, temporaries) and walks an expression's AST; each cuTile call it meets is
handed to the rule named for it in ``CALLS`` (a family module's table, merged by the driver).
"""
from __future__ import annotations

import ast
import math
import struct
from dataclasses import dataclass, field

from tileport.model import constructs, frontend
from tileport.model.constants import (  # noqa: F401 - the
    ENUM_MODULES,
    ENUMS,
    MATH_CONSTANTS,
    NUMPY_CONSTANTS,
    Member,
    enum_imports,
    enum_member,  # translator's names for them
    module_constants,
)


class Unsupported(Exception):
    """A construct the translator has no rule for. ``line`` is 1-based in ``file``."""

    def __init__(self, file: str, line: int | None, construct: str, reason: str):
        super().__init__(f"{file}:{line}: {construct}: {reason}")
        self.file, self.line, self.construct, self.reason = file, line, construct, reason


class NeedConst(Unsupported):
    """A rule needs the value of the int constexpr ``name``, which this entry keeps a const
    generic: the driver specialises the entries on it and translates again."""

    def __init__(self, file: str, line: int | None, name: str, reason: str):
        super().__init__(file, line, name, reason)
        self.name = name


# Ty.kind of a name bound to a tuple literal (``idx = (b, h + offs, s)``): value holds each
# element's (Rust expression, Ty), made where the tuple is; only a gather / scatter index reads it
INDEX_TUPLE = "index_tuple"
# Ty.kind of a name bound to None (``q_pe = None``) and not rebound yet: no value; a read is refused
NONE_VALUE = "none"
# Ty.value of an int32 scalar that is an int constexpr kept as a const generic
CONSTEXPR = "constexpr"
# the ``value`` of an int32 scalar Ty that is Rust scalar arithmetic of int constexprs (const
# generics) and int literals only: ``f"{JIT_INT}:{names}"`` (the constexprs, comma separated);
# cutile folds it to a constant when it compiles the entry (ArithRules.jit_int)
JIT_INT = "jit_int"


class NeedDtype(Unsupported):
    """A rule needs the concrete element type of E in an entry that serves several: the driver
    translates again with the entries split per dtype (never raised from a split entry)."""


@dataclass(frozen=True)
class Ty:
    """Type of a translated value.

    kind: 'tile' (dtype: Rust element type or 'E'; shape: tuple of Rust const exprs),
    'i32', 'f32', 'bool' (scalars), 'lit' (a Python literal, folded), 'arr' (ndim), 'dtype',
    'member' (value: a :class:`Member` of a cuda.tile enum), 'list' (a list-of-arrays
    parameter: dtype and ndim of its elements). 'arr', 'dtype', 'member' and 'list' exist at
    compile time only (:data:`COMPILE_TIME`): a name bound to one is an alias, no Rust value.
    """

    kind: str
    dtype: str | None = None
    shape: tuple = ()
    ndim: int = 0
    value: object = None

    def rust(self) -> str:
        if self.kind == "tile":
            return f"Tile<{self.dtype}, {{[{', '.join(self.shape)}]}}>"
        if self.kind in ("i32", "f32", "bool"):
            return self.kind
        raise TypeError(f"no Rust type for {self}")


@dataclass
class Var:
    rust: str
    ty: Ty
    decl: int | None  # index of the `let` line in the emitter, for late `mut`
    depth: int
    alias: bool = False   # a local name for a compile-time value (array, dtype, enum member)


# kinds of values that exist at compile time only (no Rust value; a name bound to one aliases it)
COMPILE_TIME = ("arr", "dtype", "member", "list")


@dataclass
class Emitter:
    lines: list = field(default_factory=list)   # [indent, text, py_line]
    indent: int = 2

    def emit(self, text: str, py_line: int | None) -> int:
        self.lines.append([self.indent, text, py_line])
        return len(self.lines) - 1


# key of an entry's specialisation holding the variant's element type (manifest code), for an
# entry that cannot be generic over E (a value or an op that depends on which type E is)
DTYPE_KEY = "__dtype__"


class TranslatorBase:
    """Translation state of one entry and the expression walk (see the module docstring)."""

    # cuTile function name -> name of the method translating a call of it (set by the driver)
    CALLS: dict[str, str] = {}

    def __init__(self, fn: ast.FunctionDef, params: list[dict], alias: str, file: str,
                 spec: dict | None = None, entry: str | None = None,
                 dtypes: tuple = ("f16", "bf16", "f32"), target: str = "sm_90",
                 module: ast.Module | None = None, array_dtypes: dict | None = None):
        self.fn, self.params, self.alias, self.file = fn, params, alias, file
        self.target = target                 # the GPU architecture compiled for (config gpu_target)
        self.module_consts = module_constants(module, alias) if module is not None else {}
        self.maths = {a.asname or a.name for n in (module.body if module else ())
                      if isinstance(n, ast.Import) for a in n.names if a.name == "math"}
        self.enum_imports = enum_imports(module) if module is not None else {}
        # names numpy is imported as: cuTile Python takes numpy's dtypes (np.int32) as its own
        self.numpys = {a.asname or a.name for n in (module.body if module else ())
                       if isinstance(n, ast.Import) for a in n.names if a.name == "numpy"}
        # constexpr values this entry is specialised for (static `if` tests, float/bool), and
        # DTYPE_KEY when the entry serves one element type only
        self.spec = dict(spec or {})
        self.dtypes = tuple(dtypes)          # the element types E takes over the variants
        # array parameter -> its element type in this entry ('E' or a Rust type; absent: 'E')
        self.array_dtypes = dict(array_dtypes or {})
        self.need_dtype = False              # set by a rule that needs E's concrete type
        self.need_strides = False            # the module needs memory.STRIDES_HELPER
        self.need_padded_gather = False      # the module needs memory.PADDED_GATHER_HELPER
        self.need_divf_full = False          # the module needs arith.DIVF_FULL_HELPER
        # module-level Python functions a kernel may call (inlined: ControlRules.inline_call)
        self.module_functions = {n.name: n for n in (module.body if module else ())
                                 if isinstance(n, ast.FunctionDef) and n is not fn
                                 and not any(frontend.is_ct(d.func if isinstance(d, ast.Call) else d, alias, "kernel")
                                             for d in n.decorator_list)}
        self.inlining: list[str] = []        # helpers being inlined (no recursion)
        self.local_prefix = ""               # Rust-name prefix of an inlined helper's names
        self.entry = entry or fn.name
        self.out = Emitter()
        self.scopes: list[dict[str, Var]] = [{}]
        self.tmp = 0
        self.line = fn.lineno
        self.need_pid = False
        self.need_nblk = False
        # float products that a following add/sub may contract into an fma:
        # rust value name -> (lhs, rhs, index of its `let` line, reads of the Python binding it
        # was given (None: a temporary, read once), flags)
        self.muls: dict[str, tuple] = {}
        # loop-carried Rust name -> index of its `name = <product>;` line, for a product in
        # self.muls under that name read once: an fma that absorbs the product drops that line too
        self.carried_products: dict[str, int] = {}
        self.uses: dict[str, int] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.uses[n.id] = self.uses.get(n.id, 0) + 1

    # ---- helpers -------------------------------------------------------------------
    def name_uses(self, name: str) -> int:
        """How often the function being translated reads ``name``: the kernel, or the helper
        being inlined (a helper's names are its own; cuTile Python inlines it before its fma
        contraction counts a product's uses). Reads in the branch a compile-time ``if`` drops
        for this entry do not count (cuTile Python never sees them: Liger's TVD reads
        ``tv_loss`` in both branches of ``if reduction == NONE``)."""
        fn = self.module_functions[self.inlining[-1]] if self.inlining else self.fn

        def reads(nodes) -> int:
            count = 0
            for n in nodes:
                kept = self.static_branch(n) if isinstance(n, ast.If) else None
                if kept is not None:
                    count += reads(kept)
                    continue
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id == name:
                    count += 1
                count += reads(ast.iter_child_nodes(n))
            return count

        return reads(fn.body)

    def binding_uses(self, stmt, name: str) -> int:
        """How often the value that statement ``stmt`` binds to ``name`` is read: the reads of
        ``name`` in the statements after ``stmt`` in its block, up to and including the first
        that rebinds ``name`` (``s = ct.add(s, c)`` reads the old value, then shadows it).
        cuTile Python counts uses per SSA value before its fma contraction, so
        ``s = ct.mul(a, b); s = ct.add(s, c)`` is one fma (cuda-tile 1.7.0
        ``_passes/rewrite_patterns.py``). A compile-time ``if`` (on constexprs) is no block of
        its own there: cuTile Python keeps only the branch taken, inline, before it counts
        (``y = t * g`` then ``if HAVE_BETA: y = y + beta`` is one fma where HAVE_BETA is
        true, Liger's DyT), so such an ``if`` is read as the statements of its taken branch,
        and a block that is that branch continues after the ``if``. Where a run-time branch or
        loop in between rebinds ``name``, or the block ends with the value still live inside a
        loop or run-time branch, this is :meth:`name_uses` (every read of the name: no
        contraction unless that is 1)."""
        fn = self.module_functions.get(self.inlining[-1]) if self.inlining else self.fn
        cache = self.__dict__.setdefault("_blocks", {})

        def blocks() -> dict:
            where = {}
            for n in ast.walk(fn):
                for field_ in ("body", "orelse", "finalbody"):
                    block = getattr(n, field_, None)
                    if isinstance(block, list):
                        for i, st in enumerate(block):
                            where[id(st)] = (block, i, n)
            return where

        if fn.name not in cache:
            cache[fn.name] = blocks()
        where = cache[fn.name]
        if id(stmt) in where and id(where[id(stmt)][2]) not in where and where[id(stmt)][2] is not fn:
            # the loop around stmt was rewritten since the table was made (a loop nested in a
            # loop is translated more than once): make it again
            cache[fn.name] = where = blocks()
        hit = where.get(id(stmt))
        if hit is None:
            return self.name_uses(name)

        def reads(node) -> int:
            return sum(1 for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name
                       and isinstance(n.ctx, ast.Load))

        def inline(stmts):
            for st in stmts:
                kept = self.static_branch(st)
                if kept is None:
                    yield st
                else:
                    yield from inline(kept)

        count = 0
        while True:
            block, i, owner = hit
            for st in inline(block[i + 1:]):
                if isinstance(st, ast.Assign) and [ast.unparse(t) for t in st.targets] == [name]:
                    return count + reads(st.value)
                if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id == name:
                    return count + 1 + reads(st.value)
                if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                       for n in ast.walk(st)):
                    return self.name_uses(name)
                count += reads(st)
            if owner is fn:
                return count
            # the end of a compile-time if's taken branch: the statements after the if follow
            if self.static_branch(owner) is block and id(owner) in where:
                hit = where[id(owner)]
                continue
            # the end of a run-time if's branch: the value goes on past the if only where the code
            # after it reads the name first (the if then yields it: a use); rebound first, it is
            # dead there; neither, the enclosing block decides (Unsloth's chunked cross-entropy:
            # `x = SOFTCAP * tanh(..)` then `loss_val = -1.0 * x` in `if label_idx != -100`)
            if isinstance(owner, ast.If) and (block is owner.body or block is owner.orelse) \
                    and id(owner) in where and self.static_branch(owner) is None:
                after, j, _ = where[id(owner)]
                event = self.first_event(name, after[j + 1:])
                if event == "write":
                    return count
                if event is None:
                    hit = where[id(owner)]
                    continue
                return self.name_uses(name)
            # the end of a loop body: the value is dead where the next iteration and the code
            # after the loop rebind the name before they read it (cuTile Python's SSA: no loop
            # result, no block argument reads it; Liger's KL-div rebinds `loss` in its loop and
            # in the tail chunk after it)
            if isinstance(owner, (ast.For, ast.While)) and block is owner.body and id(owner) in where \
                    and self.loop_event(name, owner.body) == "write":
                after, j, up = where[id(owner)]
                event = self.first_event(name, after[j + 1:])
                if event == "write" or (event is None and up is fn):
                    return count
                if event is None and isinstance(up, (ast.For, ast.While)):
                    # the inner loop ends its enclosing loop's body: the value is dead there too
                    # where that loop rebinds the name first (Liger's GroupNorm backward binds
                    # `wdy` in a loop nested in a loop, read once there: one fma)
                    hit = where[id(owner)]
                    continue
            return self.name_uses(name)

    def loop_event(self, name: str, stmts) -> str | None:
        """:meth:`first_event` that looks into run-time loops in order: a loop whose body
        writes ``name`` before any read is no read (it runs zero times or rebinds first), so
        the statements after it decide; 'write' where no path from the top reads the value
        before rebinding it (a loop nested in a loop that binds ``name`` first: Liger's
        GroupNorm backward)."""
        wrote = False
        for st in stmts:
            kept = self.static_branch(st)
            if kept is not None:
                ev = self.loop_event(name, kept)
            elif isinstance(st, (ast.For, ast.While)) and not st.orelse:
                head = st.iter if isinstance(st, ast.For) else st.test
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(head)):
                    return "read"
                ev = self.loop_event(name, st.body)
                if ev == "write":
                    wrote = True
                    continue
            else:
                ev = self.first_event(name, [st])
            if ev is not None:
                return ev
        return "write" if wrote else None

    def fail(self, node, construct: str, reason: str):
        raise Unsupported(self.file, getattr(node, "lineno", self.line), construct, reason)

    def fresh(self, stem: str = "t") -> str:
        self.tmp += 1
        return f"__{stem}{self.tmp}"

    def bind(self, expr: str, ty: Ty, stem: str = "t") -> tuple[str, Ty]:
        name = self.fresh(stem)
        self.out.emit(f"let {name}: {ty.rust()} = {expr};", self.line)
        return name, ty

    def lookup(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def rname(self, name: str) -> str:
        return constructs.rust_ident(name)

    def enum_of(self, node) -> Member | None:
        """An enum member given as an argument: ``ct.PaddingMode.ZERO``, ``RMd.APPROX``, or a
        name bound to one in the kernel or at module level; None for anything else."""
        if isinstance(node, ast.Name):
            var = self.lookup(node.id)
            v = self.module_consts.get(node.id) if var is None else var.ty.value if var.ty.kind == "member" else None
            return v if isinstance(v, Member) else None
        return enum_member(node, self.alias, self.enum_imports)

    def enum_refusal(self, node, enum: str, allowed) -> str:
        """Why ``node`` (an argument that must be a member of the cuda.tile enum ``enum``, one of
        ``allowed``) is refused, in words that never contradict what the kernel wrote: a member
        of another enum, one without a rule, or a name the translator cannot resolve to a
        cuda.tile enum (an enum imported from a module that does not define it, a variable)."""
        want = f"one of {enum}.{{{', '.join(sorted(allowed))}}}"
        member = self.enum_of(node)
        if member is not None and member.enum != enum:
            return f"{ast.unparse(node)} is a {member.enum} member; expected {want}"
        if member is not None:
            return f"{enum}.{member.name} has no rule here; expected {want}"
        base = node.value if isinstance(node, ast.Attribute) else None
        if (isinstance(base, ast.Name) and self.lookup(base.id) is None
                and base.id not in self.enum_imports and base.id != self.alias):
            return (f"{base.id} is not read as a cuda.tile enum: the translator resolves an enum written "
                    f"{self.alias}.{enum}.<member> or imported with `from cuda.tile import {enum}` (or "
                    f"from {ENUM_MODULES.get(enum, 'cuda.tile')}); expected {want}")
        return f"{ast.unparse(node)} is not a {enum} member known at compile time; expected {want}"

    def is_ct(self, node, attr=None) -> bool:
        return frontend.is_ct(node, self.alias, attr)

    def _kw(self, call, name, pos=None):
        return frontend.kw(call, name, pos)

    def check_kwargs(self, call, allowed: set):
        for k in call.keywords:
            if k.arg not in allowed:
                self.fail(call, f"{ast.unparse(call.func)}(..., {k.arg}=...)",
                          f"keyword '{k.arg}' not translated (allowed: {sorted(allowed)})")

    # ---- expressions ---------------------------------------------------------------
    def int_expr(self, node) -> str:
        """An int32 index / bound: a literal, an int32 scalar or a 0-d int32 tile (cuTile
        Python takes either; cutile's ``tile_to_scalar`` is the same value, no op)."""
        e, ty = self.expr(node)
        return self.int_expr_of((e, ty), node)

    def int_expr_of(self, value: tuple, node=None) -> str:
        """A translated value ``(expr, Ty)`` as an int32 scalar (see :meth:`int_expr`)."""
        e, ty = value
        if ty.kind == "lit" and isinstance(ty.value, int):
            return f"{ty.value}i32"
        if ty.kind == "tile" and ty.shape == () and ty.dtype == "i32":
            # a 0-d tile is cuTile Python's scalar (the same Tile IR value)
            return self.bind(f"tile_to_scalar({e})", Ty("i32"))[0]
        if ty.kind != "i32":
            self.fail(node, ast.unparse(node), f"expected an int32 scalar, got {ty.kind}")
        return e

    def tile_expr(self, node) -> tuple[str, Ty]:
        e, ty = self.expr(node)
        if ty.kind != "tile":
            self.fail(node, ast.unparse(node), f"expected a tile, got {ty.kind}")
        return e, ty

    def lit_scalar(self, ty: Ty) -> tuple[Ty, str]:
        if isinstance(ty.value, bool) or not isinstance(ty.value, (int, float)):
            raise TypeError(ty)
        if isinstance(ty.value, int):
            return Ty("i32"), f"{ty.value}i32"
        return Ty("f32"), self.f32_lit(ty.value)

    def f32_lit(self, v: float) -> str:
        """A finite f32 literal with the bits cuTile Python gives ``v``: cutile reads the
        decimal as an f64 and rounds it to f32 (cutile-compiler 0.5.0 ``encode_literal_bytes``),
        as cuTile Python rounds the Python float. Infinities and NaN have no literal (they
        are made as constant tiles: :meth:`ArithRules.f32_constant`); in a scalar position
        cutile takes no ``f32::INFINITY`` either (``compile_expression.rs``: associated consts
        "are not supported in expression position")."""
        if not math.isfinite(float(v)):
            self.fail(None, repr(v), "a non-finite f32 scalar has no cuTile Rust literal (cutile "
                                     "0.5.0 reads associated consts such as f32::INFINITY only "
                                     "as a constant tile's value): use it in a tile")
        try:
            struct.pack("<f", float(v))
        except OverflowError:
            # rounded to f32 it is infinite: rustc refuses the literal (`overflowing_literals`)
            self.fail(None, repr(v), "the float rounds to infinity in f32 (no f32 literal): write "
                                     "math.inf (or -math.inf) if that is meant")
        return f"{float(v)!r}f32"

    def expr(self, node) -> tuple[str, Ty]:
        if isinstance(node, ast.Name):
            var = self.lookup(node.id)
            if var is None and node.id in self.module_consts:
                v = self.module_consts[node.id]
                return repr(v), Ty("member" if isinstance(v, Member) else "lit", value=v)
            if var is None:
                self.fail(node, node.id, "name not defined in the kernel nor a module-level "
                                         "constant (an int/float literal bound once)")
            if var.ty.kind == NONE_VALUE:
                self.fail(node, node.id, "a name bound to None is read: only a placeholder that "
                                         "this entry rebinds before any read is translated")
            if var.ty.kind == INDEX_TUPLE:
                self.fail(node, node.id, "a tuple bound to a name is translated as a ct.gather / "
                                         "ct.scatter index only")
            return var.rust, var.ty
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return repr(node.value), Ty("lit", value=node.value)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return repr(node.value), Ty("lit", value=node.value)
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return self.bool_op(node)
        if isinstance(node, ast.IfExp):
            return self.if_expr(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self.invert(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            e, ty = self.expr(node.operand)
            if ty.kind == "lit":
                return repr(-ty.value), Ty("lit", value=-ty.value)
            if ty.kind == "tile":
                return self.bind(f"negf({e})", ty)
            if ty.kind in ("i32", "f32"):
                return f"(-{e})", ty
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in self.maths and node.attr in MATH_CONSTANTS
                and self.lookup(node.value.id) is None):
            v = MATH_CONSTANTS[node.attr]
            return repr(v), Ty("lit", value=v)
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in self.numpys and node.attr in NUMPY_CONSTANTS
                and self.lookup(node.value.id) is None):
            # numpy's pi, e, inf, nan, euler_gamma are Python floats: cuTile Python reads them
            # as it reads math.pi (a loosely typed constant: _ir/core_ops.py getattr_module_impl)
            v = NUMPY_CONSTANTS[node.attr]
            return repr(v), Ty("lit", value=v)
        if isinstance(node, ast.Attribute):
            if (self.is_ct(node) or (isinstance(node.value, ast.Name) and node.value.id in self.numpys
                                     and self.lookup(node.value.id) is None)) and node.attr in constructs.DTYPE_ATTRS:
                return node.attr, Ty("dtype", dtype=constructs.DTYPE_ATTRS[node.attr][1])
            member = enum_member(node, self.alias, self.enum_imports)
            if member is not None:
                return repr(member), Ty("member", value=member)
            if node.attr == "dtype" and not self.is_ct(node):
                return self.dtype_attribute(node)
            if node.attr == "ndim" and not self.is_ct(node):
                return self.ndim_attribute(node)
        if isinstance(node, ast.Subscript) and frontend.is_shape_subscript(node):
            return self.shape_dim(node)
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and self.lookup(node.value.id) is not None and self.lookup(node.value.id).ty.kind == "list"):
            return self.list_element(node)            # As[g]: a tensor view (memory)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call) and self.is_ct(node.func):
            return self.call(node)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "slice"
                and isinstance(node.func.value, ast.Name) and self.lookup(node.func.value.id) is not None
                and self.lookup(node.func.value.id).ty.kind == "arr"):
            return self.array_slice(node)             # Array.slice: a tensor view (memory)
        if isinstance(node, ast.Call) and frontend.is_tile_method(node.func, self.alias):
            return self.call(self.method_as_call(node))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("min", "max") and self.lookup(node.func.id) is None):
            return self.builtin_minmax(node)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
                and self.lookup("len") is None):
            return self.list_len(node)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in self.module_functions and self.lookup(node.func.id) is None):
            return self.inline_call(node)
        self.fail(node, ast.unparse(node)[:60], f"expression ({type(node).__name__}) not translated")

    def dtype_attribute(self, node: ast.Attribute) -> tuple[str, Ty]:
        """``v.dtype`` of an array (a parameter or a name bound to one), a tile or a scalar:
        the element type, known at compile time."""
        _, ty = self.expr(node.value)
        if ty.kind in ("arr", "tile"):
            return ty.dtype, Ty("dtype", dtype=ty.dtype)
        if ty.kind in ("i32", "f32", "bool"):
            return ty.kind, Ty("dtype", dtype=ty.kind)
        self.fail(node, ast.unparse(node), f"`.dtype` of a {ty.kind}: only arrays, tiles and scalars "
                                           f"have one")

    def ndim_attribute(self, node: ast.Attribute) -> tuple[str, Ty]:
        """``v.ndim`` of an array or a tile: its rank, an int known at compile time (cuTile
        Python folds it; cuda/tile/_stub.py ``Tile.ndim``, ``Array.ndim``)."""
        _, ty = self.expr(node.value)
        if ty.kind == "arr":
            return repr(ty.ndim), Ty("lit", value=ty.ndim)
        if ty.kind == "tile":
            return repr(len(ty.shape)), Ty("lit", value=len(ty.shape))
        self.fail(node, ast.unparse(node), f"`.ndim` of a {ty.kind}: only arrays and tiles have one")

    def method_as_call(self, node: ast.Call) -> ast.Call:
        """``t.name(args)`` as the ``ct.name(t, args)`` it spells (same line numbers)."""
        func = ast.Attribute(value=ast.Name(self.alias, ast.Load()), attr=node.func.attr, ctx=ast.Load())
        return ast.copy_location(ast.Call(func=ast.copy_location(func, node.func),
                                          args=[node.func.value, *node.args], keywords=node.keywords), node)

    def call(self, node: ast.Call) -> tuple[str, Ty]:
        """A ``ct.<name>(...)`` call: the rule ``CALLS[name]`` translates it."""
        name = node.func.attr
        rule = self.CALLS.get(name)
        if rule is None:
            self.fail(node, f"{self.alias}.{name}", "no translation rule for this cuTile call")
        return getattr(self, rule)(node)
