"""Control flow: statements, assignment (also ``a, b = x, y``), ``for``/``while`` loops,
compile-time and run-time ``if`` and ``a if c else b``, and the launch grid.

* ``for x in range(...)`` becomes a Rust range loop; a name reassigned inside a loop that was
  bound outside it becomes a loop-carried ``let mut``;
* an ``if`` on constexprs keeps only the branch the entry's constexpr values take (cuTile
  Python resolves it when it compiles a variant);
* ``ct.bid(axis)`` / ``ct.num_blocks(axis)`` read ``get_tile_block_id()`` /
  ``get_num_tile_blocks()``, bound once at the top of the entry.
"""
from __future__ import annotations

import ast

from tileport.model import constructs, frontend

from .core import COMPILE_TIME, INDEX_TUPLE, NONE_VALUE, Ty, Unsupported, Var

#: a ``for`` over a range empty at compile time is left out of the port: cuTile Python 1.7.0 emits
#: the zero-trip loop (``for %i in (%c0 to %c0, step %c1)``), which cutile 0.5.0 cannot write (it
#: puts ``assume bounded<start, end - 1>`` on the index of every loop whose bounds are constants,
#: cutile-compiler-0.5.0 src/compiler/compile_expression.rs:2538-2541, emitted at 2557-2563; here
#: ``bounded<0, -1>``, which the Tile IR verifier refuses); the IR diff removes such a loop on
#: both sides, its results being its inits (ir_diff normalise ``zero_trip_loops``).
EMPTY_RANGE_NOTE = "range empty for this entry: the loop never runs (cuTile Python's zero-trip `for`)"


class ControlRules:
    """Rules for statements and the launch grid (mixed into the driver's translator)."""

    CALLS = {"bid": "grid_block_id", "num_blocks": "grid_num_blocks"}

    # ---- statements ----------------------------------------------------------------
    def block(self, stmts):
        cont = self.__dict__.setdefault("cont", [])
        tails = self.__dict__.setdefault("guard_tails", [])
        for i, s in enumerate(stmts):
            self.line = s.lineno
            guard = not self.inlining and any(stmts is t for t in tails) and self.is_guard(s)
            if guard:
                # `if c: ...; return` in the kernel's tail: `if c { ... } else { <the rest> }`
                # (guard_clauses); nothing runs after that if
                rest = stmts[i + 1:]
                tails.append(rest)
                s = ast.copy_location(ast.If(test=s.test, orelse=rest, body=s.body[:-1] or [
                    ast.copy_location(ast.Pass(), s)]), s)
            cont.append([] if guard else stmts[i + 1:])   # what runs next (for liveness: live_after)
            try:
                self.stmt(s)
            except Unsupported:
                raise
            except (AttributeError, IndexError, KeyError, TypeError, ValueError,
                    ZeroDivisionError) as exc:
                # a malformed call (missing argument, wrong arity...) the rules did not foresee
                self.fail(s, ast.unparse(s).splitlines()[0][:80],
                          f"cannot translate this statement ({type(exc).__name__}: {exc}); "
                          f"check the cuTile call's arguments")
            finally:
                cont.pop()
            if guard:
                break
            if self.out.lines and self.out.lines[-1][1] == "continue;" \
                    and self.out.lines[-1][0] == self.out.indent:
                # nothing after a continue runs (cuTile Python's split loop keeps a branch that
                # continues as the end of the body: loop_split.py _clone_loop, early_continue)
                break

    # ---- liveness (cuTile Python's dead code elimination drops unused if results) -----
    def live_after(self, name: str) -> bool:
        """May ``name``'s current value be read after the statement being translated? The
        statements that follow, innermost block first: a read first means live, an
        unconditional rebinding first means dead; a loop's body is read again from its start
        (the next iteration), then what follows the loop; a helper's value ends at its return.
        Conservative: a read anywhere inside a statement counts as a read."""
        for entry in reversed(self.__dict__.get("cont", [])):
            kind, stmts = entry if isinstance(entry, tuple) else ("rest", entry)
            ev = self.first_event(name, stmts)
            if ev == "read":
                return True
            if kind == "helper" or (kind == "rest" and ev == "write"):
                return False
        return False

    #: calls a dead load statement may consist of: the weak loads (no side effect but their token), the
    #: casts / reshapes of what they read and the index tiles (ct.arange) of a gather
    PURE_LOAD_CALLS = {"gather", "load", "astype", "reshape", "arange"}

    def is_dead_load(self, s: ast.Assign) -> bool:
        """``name = <a ct.gather / ct.load, cast or reshaped>`` whose value no later statement reads
        (:meth:`live_after`): cuTile Python's dead code elimination removes the load and, with it, its
        token from the memory order of later stores to that array (TileGym's LFM2 causal_conv1d_update
        reads the state column s0 it then overwrites, and never uses it), so the port emits nothing."""
        calls = [n for n in ast.walk(s.value) if isinstance(n, ast.Call)]
        if not calls or not any(isinstance(c.func, ast.Attribute) and c.func.attr in ("gather", "load")
                                and self.is_ct(c.func) for c in calls):
            return False
        for c in calls:
            f = c.func
            if not (isinstance(f, ast.Attribute) and f.attr in self.PURE_LOAD_CALLS
                    and (self.is_ct(f) or f.attr in ("astype", "reshape"))):
                return False
        return not self.live_after(s.targets[0].id)

    def first_event(self, name: str, stmts) -> str | None:
        """'read', 'write' or None: what ``stmts`` (in order) first do with ``name``
        (compile-time ``if``s: the branch taken)."""
        for st in stmts:
            kept = self.static_branch(st)
            if kept is not None:
                ev = self.first_event(name, kept)
                if ev is not None:
                    return ev
                continue
            if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id == name:
                return "read"
            if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                   for n in ast.walk(st)):
                return "read"
            if isinstance(st, ast.Assign) and any(
                    isinstance(n, ast.Name) and n.id == name
                    for t in st.targets for n in ([t] if isinstance(t, ast.Name) else
                                                  t.elts if isinstance(t, ast.Tuple) else [])):
                return "write"
        return None

    def static_branch(self, st) -> list | None:
        """The statements this entry keeps of a compile-time ``if`` (its test reads constexprs,
        module constants and literals only): the body or the ``else``; None for any other
        statement. cuTile Python inlines that branch where the ``if`` stands."""
        if not (isinstance(st, ast.If) and self.is_static_test(st.test)):
            return None
        taken = eval(compile(ast.Expression(st.test), self.file, "eval"),  # noqa: S307
                     {"__builtins__": {}}, self.static_env())
        return st.body if taken else st.orelse

    def stmt(self, s):
        if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple)
                and all(isinstance(t, ast.Name) for t in s.targets[0].elts)
                and (isinstance(s.value, ast.Call) or (isinstance(s.value, ast.Tuple)
                                                        and len(s.targets[0].elts) == len(s.value.elts)))):
            self.tuple_assign(s)
        elif isinstance(s, ast.Assign):
            if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
                self.fail(s, ast.unparse(s).split("=")[0].strip(), "only `name = expr` and "
                                                                   "`a, b = x, y` assignments")
            if self.is_dead_load(s):
                return          # cuTile Python's dead code elimination drops it: so does the port
            if isinstance(s.value, ast.Tuple):
                self.index_tuple_assign(s.targets[0].id, s.value)
                return
            if isinstance(s.value, ast.Constant) and s.value.value is None and self.lookup(s.targets[0].id) is None:
                # `q_pe = None`, rebound only under a constexpr test (FlashInfer's prefill): a
                # compile-time placeholder, no value; reading it is refused (:meth:`expr`)
                self.scopes[-1][s.targets[0].id] = Var("", Ty(NONE_VALUE), None, len(self.scopes) - 1)
                return
            self.assign(s.targets[0].id, s.value, s)
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            self.assign(s.target.id, ast.BinOp(left=ast.Name(s.target.id, ast.Load()), op=s.op,
                                               right=s.value, lineno=s.lineno), s)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and self.is_ct(s.value.func, "store"):
            self.store(s.value)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and self.is_ct(s.value.func, "scatter"):
            self.scatter(s.value)
        elif (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute)
                and self.is_ct(s.value.func) and s.value.func.attr in constructs.ATOMICS):
            self.atomic(s.value)         # an atomic whose old values are not used
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and self.is_tiled_view_atomic(s.value):
            self.tiled_view_atomic(s.value)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and self.is_ct(s.value.func, "static_assert"):
            self.static_assert(s.value)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            pass  # a string used as a comment
        elif (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
              and s.value.func.id in self.module_functions and self.lookup(s.value.func.id) is None):
            self.inline_call(s.value, statement=True)   # a helper called for its stores
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Return) and s.value is None and s is self.fn.body[-1]:
            pass
        elif isinstance(s, ast.Return) and s.value is None and not self.inlining:
            self.early_return(s)
        elif isinstance(s, ast.Continue):
            self.loop_continue(s)
        elif isinstance(s, ast.For):
            self.for_loop(s)
        elif isinstance(s, ast.While):
            self.while_loop(s)
        elif (isinstance(s, ast.If) and getattr(self, "helper_loops", 0) and not s.orelse and len(s.body) == 1
              and isinstance(s.body[0], ast.Return) and s.body[0].value is None and self.inlining
              and not self.is_static_test(s.test)):
            self.guard_break(s)            # a helper's guard clause, in its once-run loop
        elif isinstance(s, ast.If) and self.is_static_test(s.test):
            self.static_if(s)
        elif isinstance(s, ast.If):
            self.runtime_if(s)
        else:
            self.fail(s, type(s).__name__.lower() + ": " + ast.unparse(s).splitlines()[0][:60],
                      "statement not translated")

    def index_tuple_assign(self, name: str, value: ast.Tuple) -> None:
        """``idx = (b, base + offs, s)``: a tuple of index values bound to a name, then passed
        as a ``ct.gather`` / ``ct.scatter`` index (FlashInfer's decode kernels). Each element is
        translated here, where Python evaluates it (cuTile Python builds a tuple value of the
        element values at this point); the name is a compile-time alias for that tuple
        (:data:`INDEX_TUPLE`) that the gather/scatter rule reads element by element. Any other
        use of the name is refused (:meth:`expr`)."""
        elems = tuple(self.expr(e) for e in value.elts)
        self.scopes[-1][name] = Var("", Ty(INDEX_TUPLE, value=elems), None, len(self.scopes) - 1, alias=True)

    def assign(self, name: str, value, node, computed: tuple | None = None):
        """``name = value`` (``computed``: the value's (Rust expression, type) already made). A
        name bound to an array, a dtype or an enum member (``zero_pad = ct.PaddingMode.ZERO``)
        is a compile-time alias (:meth:`bind_alias`): nothing is emitted."""
        expr, ty = computed if computed is not None else self.expr(value)
        var = self.lookup(name)
        depth = len(self.scopes) - 1
        if ty.kind == "lit" and name not in self.carried_names() and (
                var is None or var.depth == depth or var.ty.kind == "lit"):
            # a Python number / bool bound to a name stays a compile-time value, loosely typed
            # as cuTile Python keeps it (a local `c = 0.5` times an f16 tile is f16); a name a
            # loop or branch rebinds is a typed value instead (cuTile makes a loop-carried or
            # yielded value concrete)
            self.scopes[-1][name] = Var(expr, ty, None, depth)
            return
        if ty.kind in ("lit",):
            ty, expr = self.lit_scalar(ty)
        if ty.kind in COMPILE_TIME or (var is not None and var.alias):
            self.bind_alias(name, expr, ty, var, depth, node, value)
            return
        dead = self.__dict__.get("dead_ifs") or [(None, ())]
        if dead[-1][0] == depth and name in dead[-1][1]:
            var = None                          # not read after the if: a binding of the branch
        if var is not None and var.depth < depth and var.decl is not None:
            # loop-carried: assign to the outer binding (types must agree)
            if var.ty.kind == ty.kind == "i32" and var.ty.value != ty.value:
                # an int32 known when cutile compiles the entry (a constexpr expression, its
                # ``value`` marks it) changed in a loop: a plain int32 from here on
                var.ty = ty = Ty("i32")
            if var.ty.kind in ("f32", "i32") and ty.kind == "tile" and ty.shape == () \
                    and ty.dtype == var.ty.kind:
                # a 0-d tile bound to a name a Python number held (Unsloth's `loss_val = 0.0`,
                # then `loss_val = -1.0 * x` in a branch): one Tile IR type, tile<f32>, in
                # cuTile Python; the Rust binding keeps its scalar type (no op in the IR)
                expr, ty = self.bind(f"tile_to_scalar({expr})", var.ty)
            if var.ty != ty:
                self.fail(node, name, f"reassigned in a loop with type {ty.rust()} but bound "
                                      f"outside as {var.ty.rust()}")
            ind, txt, pl = self.out.lines[var.decl]
            if txt.startswith("let ") and not txt.startswith("let mut "):
                self.out.lines[var.decl][1] = "let mut " + txt[4:]
            at = self.out.emit(f"{var.rust} = {expr};", self.line)
            self.muls.pop(var.rust, None)      # the name no longer holds that multiply
            self.carried_products.pop(var.rust, None)
            if expr in self.muls:
                # a float product given to a loop-carried name: in cuTile Python's SSA the name
                # is that multiply. Read more than once, an add reading it on the left is not
                # contracted, nor is its right operand (the left is chosen first: the recurrent
                # gated delta rule's `State = State * exp(g)`, read by a reduction and by
                # `State + KeyT * Delta`). Read once, the add contracts it (the online softmax's
                # `sum_exp = sum_exp * exp(m - m')` then `sum_exp + sum(..)`): the fma drops
                # the multiply and this assignment, so the name still holds its old value there
                a, b, i, _, fl = self.muls.pop(expr)
                uses = self.binding_uses(node, name)
                self.muls[var.rust] = (a, b, i, uses, fl)
                if uses == 1:
                    self.carried_products[var.rust] = at
            return
        if var is not None and var.decl is None and (var.depth != depth or name in self.carried_names()):
            # a parameter or compile-time name rebound in a loop or branch (a plain rebinding
            # shadows it, as in Python)
            self.fail(node, name, "rebinding a kernel parameter or a compile-time value inside a "
                                  "loop or branch is not translated")
        rn = self.local_prefix + self.rname(name)
        if rn in self.const_generic_names():
            rn = self.fresh(f"{rn}_")
        # a rebinding shadows the Rust name: a multiply it held before is not this value (an
        # fma contraction must not see `acc = a * b; acc = mma(..); acc + x * y` as a*b + ...)
        self.muls.pop(rn, None)
        self.carried_products.pop(rn, None)
        # the line that bound the value (token bookkeeping after a load does not count)
        pos = len(self.out.lines) - 1
        while pos >= 0 and pos in getattr(self, "tok_pure", {}):
            pos -= 1
        last = self.out.lines[pos] if pos >= 0 else None
        if (expr.startswith("__t") and last is not None and last[0] == self.out.indent
                and last[1].startswith(f"let {expr}: ")):
            # the value was just bound to a temporary: give that binding the Python name
            last[1] = f"let {rn}: " + last[1][len(f"let {expr}: "):]
            idx = pos
            if expr in self.muls:
                a, b, i, _, fl = self.muls.pop(expr)
                # the reads of this binding of the name (not of every binding)
                self.muls[rn] = (a, b, i, self.binding_uses(node, name), fl)
        else:
            idx = self.out.emit(f"let {rn}: {ty.rust()} = {expr};", self.line)
        self.scopes[-1][name] = Var(rn, ty, idx, depth)

    def const_generic_names(self) -> set[str]:
        """Rust names of the entry's const generics (its int constexpr parameters). A kernel
        may rebind such a parameter to a run-time value (Liger's RoPE: ``cos_bs: ConstInt``,
        then ``cos_bs = COS.shape[0]``); Rust cannot shadow a const generic with a ``let``
        (error E0158: the name in a pattern is the constant), so the new binding gets a Rust
        name of its own (:meth:`assign`)."""
        return {self.rname(p["name"]) for p in self.params
                if p["kind"] == "constexpr" and p.get("ctype", "int") == "int"}

    def carried_names(self) -> set[str]:
        """Names the function being translated (the kernel, or the helper being inlined)
        assigns inside a ``for`` / ``while`` body or a run-time ``if`` branch: their values
        flow through the loop or the branch, so they are typed Rust values, never folded."""
        fn = self.module_functions.get(self.inlining[-1]) if self.inlining else self.fn
        cache = self.__dict__.setdefault("_carried", {})
        if fn.name not in cache:
            names = set()
            static = set(self.spec) | set(self.module_consts) | {
                p["name"] for p in self.params if p["kind"] == "constexpr"}
            for n in ast.walk(fn):
                if isinstance(n, (ast.For, ast.While)) or (
                        isinstance(n, ast.If) and not self.compile_time_test(n.test, static)):
                    for st in n.body + n.orelse:
                        for t in ast.walk(st):
                            if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                                names.add(t.id)
            cache[fn.name] = names
        return cache[fn.name]

    def compile_time_test(self, test, static: set) -> bool:
        """Does ``test`` read compile-time values only (names in ``static``, literals, dtypes:
        ``x.dtype``, ``ct.float32``)?"""
        for n in ast.walk(test):
            if isinstance(n, ast.Attribute):
                if not (n.attr == "dtype" or self.is_ct(n)):
                    return False
            elif isinstance(n, ast.Name):
                if n.id not in static and n.id != self.alias and not any(
                        isinstance(p, ast.Attribute) and p.value is n for p in ast.walk(test)):
                    return False
            elif not isinstance(n, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Constant,
                                    ast.Load, ast.And, ast.Or, ast.Not, ast.cmpop, ast.operator,
                                    ast.unaryop)):
                return False
        return True

    def bind_alias(self, name, expr, ty, var, depth, node, value):
        """``name = <array | dtype | enum member>``: the name aliases that compile-time value
        (cuTile Python binds the object; nothing is emitted). Rebinding it is allowed where
        Python's order and Rust's agree: at the depth it was bound, to another compile-time
        value or (shadowing) a run-time one; inside a loop or branch only to the same value."""
        what = f"{name} = {ast.unparse(value) if value is not None else '...'}"
        if var is not None and var.depth < depth and (var.ty, var.rust) != (ty, expr) and (
                var.alias or ty.kind in COMPILE_TIME):
            self.fail(node, what, "a name bound to an array, dtype or enum member outside a loop or "
                                  "branch is rebound to another value inside it: not translated")
        if ty.kind in COMPILE_TIME:
            self.scopes[-1][name] = Var(expr, ty, None, depth, alias=True)
            return
        del self.scopes[-1][name]               # shadowed by a run-time value from here on
        self.assign(name, None, node, computed=(expr, ty))

    def tuple_assign(self, s: ast.Assign):
        """``a, b = x, y`` (or ``a, b = helper(...)``): every right-hand value first (Python's
        order), then the names."""
        values = []
        if isinstance(s.value, ast.Call):
            got = self.expr(s.value)
            if not isinstance(got, list) or len(got) != len(s.targets[0].elts):
                self.fail(s, ast.unparse(s)[:60], "the call does not return that many values")
            pairs = list(zip(s.targets[0].elts, got))
        else:
            pairs = [(t, self.expr(v)) for t, v in zip(s.targets[0].elts, s.value.elts)]
        for t, (e, ty) in pairs:
            if ty.kind != "lit" and ty.kind not in COMPILE_TIME:
                tmp = self.fresh("tup")
                self.out.emit(f"let {tmp}: {ty.rust()} = {e};", self.line)
                e = tmp
            values.append((t.id, e, ty))
        for name, e, ty in values:
            self.assign(name, None, s, computed=(e, ty))

    def static_env(self) -> dict:
        """Names whose value is known at compile time here: module constants, the entry's
        specialised constexprs, names bound to literals (an inlined helper's arguments)."""
        env = {**self.module_consts, **self.spec}
        for scope in self.scopes:
            env.update({n: v.ty.value for n, v in scope.items() if v.ty.kind == "lit"})
            for n, v in scope.items():          # a name bound to a run-time value hides a
                if v.ty.kind != "lit":          # constexpr of that name (a helper's parameter)
                    env.pop(n, None)
        return env

    def is_static_test(self, test) -> bool:
        """Is an ``if`` test decided at compile time (constexprs, module constants, literals)?"""
        env = self.static_env()
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        return frontend.static_test(test, set(env)) and names <= set(env)

    def runtime_if(self, s: ast.If):
        """An ``if`` on a run-time value: a Rust ``if`` (cutile's ``if`` op; a name the branches
        rebind is yielded out of it, as cuTile Python does). A name first bound inside a branch
        is local to it. In a split loop (:meth:`loop_split`) the branch taken there, inline."""
        flat = getattr(self, "flat_ifs", {}).get(id(s))
        if flat is not None:
            self.out.emit(f"// if {ast.unparse(s.test)}: {flat == 'then'} in this part of the "
                          f"split loop", s.lineno)
            self.block(s.body if flat == "then" else s.orelse)
            # a value the other branch rebinds is still carried by this loop (cuTile Python
            # splits the loop after choosing what it carries): pass it on unchanged
            def stored(stmts):
                return dict.fromkeys(t.id for st in stmts for t in ast.walk(st)
                                     if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store))
            kept, other = (s.body, s.orelse) if flat == "then" else (s.orelse, s.body)
            depth = len(self.scopes) - 1
            for name in [n for n in stored(other) if n not in stored(kept)]:
                var = self.lookup(name)
                if var is not None and var.decl is not None and var.depth < depth and not var.alias:
                    self.assign(name, None, s, computed=(var.rust, var.ty))
            return
        c, cty = self.condition(s.test)
        if cty.kind == "lit":
            # decided at compile time (a dtype test, a name bound to a constant): the branch
            # taken, inline, as cuTile Python folds it
            self.out.emit(f"// if {ast.unparse(s.test)}: {bool(cty.value)} for this entry", s.lineno)
            self.block(s.body if cty.value else s.orelse)
            return
        if cty.kind != "bool":
            self.fail(s, "if " + ast.unparse(s.test), "the condition must be a comparison of "
                                                      "int32 scalars (or a constexpr test)")
        # a value the branches rebind that nothing reads after the if is not yielded (cuTile
        # Python's dead code elimination drops the unused if result): the branch binds its own
        depth = len(self.scopes)
        dead = set()
        for name in dict.fromkeys(t.id for st in s.body + s.orelse for t in ast.walk(st)
                                  if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)):
            var = self.lookup(name)
            if (var is not None and var.decl is not None and var.depth < depth and not var.alias
                    and not self.live_after(name)):
                dead.add(name)
        self.declare_branch_bound(s)
        stack = self.__dict__.setdefault("dead_ifs", [])
        stack.append((depth, dead))
        try:
            self.tokened_if(f"if {c} {{", lambda: self.branch(s.body),
                            (lambda: self.branch(s.orelse)) if s.orelse else None, s.lineno)
        finally:
            self.dead_ifs.pop()

    def declare_branch_bound(self, s: ast.If) -> None:
        """A name first bound in both branches of this run-time ``if`` and read after it (Liger's
        GRPO: ``if delta != 0.0: c = ct.minimum(coef_1, ..) else: c = coef_1``; FlashInfer's LPT
        schedule: ``block = l2_mod // SWIZZLE`` in one, ``// NUM_HB_REMAINDER`` in the other):
        cuTile Python yields it from the ``if``. The port declares it before the ``if`` (its type
        from a dry run of the first branch; a Python number as the int32 / f32 scalar it becomes)
        with a zero of that type that no op reads, so each branch assigns it and cutile's ``if``
        yields it; the IR diff drops the unread constant (dead code). Only names bound by a
        top-level assignment of each branch count; a name of another type stays local to its
        branches."""
        if not s.orelse or any(isinstance(n, (ast.Continue, ast.Break, ast.Return))
                               for st in s.body + s.orelse for n in ast.walk(st)):
            # a branch that leaves (continue / break / return) goes on with nothing to yield;
            # cutile's continue would carry the declared name too (:meth:`loop_continue`)
            return

        def bound(stmts):
            return {t.id for st in stmts if isinstance(st, (ast.Assign, ast.AnnAssign))
                    for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
                    if isinstance(t, ast.Name)}
        names = [n for n in sorted(bound(s.body) & bound(s.orelse))
                 if self.lookup(n) is None and self.live_after(n)]
        if not names:
            return
        seen: dict = {}

        def probe():
            self.out.indent += 1
            self.scopes.append({})
            self.block(s.body)
            seen.update({n: self.scopes[-1][n].ty for n in names if n in self.scopes[-1]})
            self.scopes.pop()
            self.out.indent -= 1
        self._dry_run(probe)
        depth = len(self.scopes) - 1
        for n in names:
            ty = seen.get(n)
            if ty is not None and ty.kind == "lit" and type(ty.value) in (int, float):
                ty, _ = self.lit_scalar(ty)
            if ty is None or ty.kind not in ("tile", "f32", "i32") or (
                    ty.kind == "tile" and ty.dtype not in ("E", "f32", "i32", "i64")):
                continue
            init = {"f32": "0.0f32", "i32": "0i32"}.get(ty.kind)
            if init is None:
                init = self.constant_tile(0, ty.dtype, ty.shape, s)[0]
            rn = self.local_prefix + self.rname(n)
            idx = self.out.emit(f"let mut {rn}: {ty.rust()} = {init};", s.lineno)
            self.scopes[-1][n] = Var(rn, ty, idx, depth)

    def condition(self, test) -> tuple[str, Ty]:
        """A run-time test's value: a bool scalar (a 0-d bool tile, e.g. a comparison with a
        value loaded from memory, is cuTile Python's bool scalar: the same Tile IR value)."""
        c, cty = self.expr(test)
        if cty.kind == "tile" and cty.shape == () and cty.dtype == "bool":
            return self.bind(f"tile_to_scalar({c})", Ty("bool"))
        if cty.kind == "i32":
            # an int32 scalar's truth (`if scale_ue8m0:`, FlashInfer's per-token-group quant):
            # cuTile Python compares it with 0, `cmpi not_equal %x, 0 signed`
            return self.bind(f"{c} != 0i32", Ty("bool"))
        return c, cty

    def branch(self, stmts):
        self.out.indent += 1
        self.scopes.append({})
        self.block(stmts)
        self.scopes.pop()
        self.out.indent -= 1

    def while_loop(self, s: ast.While):
        """``while cond:`` -> cutile's ``loop`` op with an ``if`` that ``break``s when the test
        fails, at the top of each iteration, as cuTile Python builds it. A test on scalars only
        (a comparison of int32 scalars) is one Rust expression: a Rust ``while``, which cutile
        0.5.0 lowers to that loop (cutile-compiler compile_expression.rs, ``Expr::While``). A
        test that touches memory (``while ct.atomic_cas(locks, i, 0, 1) == 1:``, a spin lock:
        the 0-d tile the atomic returns compared with a scalar) is computed again on every
        iteration: ``loop { <test>; if c {} else { break; } <body> }`` (:meth:`exit_test`)."""
        if s.orelse:
            self.fail(s, "while ... else", "a while loop's else is not translated")
        if self.touches_memory(s.test) or (isinstance(s.test, ast.BoolOp) and self.split_test(s.test) is None):
            # (also a run-time `a and b`: cuTile Python short-circuits it into an `if` yielding
            # the bool, at the top of each iteration -- FlashInfer's ragged block-scaled BMM,
            # `while tile_idx >= end and tile_idx < end + tiles:`; :meth:`bool_chain`)
            def looped():
                self.__dict__.setdefault("cont", []).append(("loop", s.body))
                try:
                    self.out.indent += 1
                    self.scopes.append({})
                    self.exit_test(s)
                    self.block(s.body)
                    self.scopes.pop()
                    self.out.indent -= 1
                finally:
                    self.cont.pop()
            self.tokened_loop("loop {", looped, s.lineno)
            return
        mark = len(self.out.lines)
        c, cty = self.expr(s.test)
        if (cty.kind != "bool" or len(self.out.lines) != mark + 1
                or not self.out.lines[-1][1].startswith(f"let {c}: bool = ")):
            self.fail(s, "while " + ast.unparse(s.test), "the condition must be a comparison of "
                                                         "int32 scalars, or of an atomic's or a "
                                                         "load's 0-d result")
        cond = self.out.lines.pop()[1][len(f"let {c}: bool = "):-1]
        def body():
            self.__dict__.setdefault("cont", []).append(("loop", s.body))
            try:
                self.branch(s.body)
            finally:
                self.cont.pop()
        self.tokened_loop(f"while {cond} {{", body, s.lineno)

    def touches_memory(self, test) -> bool:
        """Does ``test`` call a cuTile memory op (an atomic, ``ct.load``, ``ct.gather``)?"""
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and self.is_ct(n.func)
                   and (n.func.attr in constructs.ATOMICS or n.func.attr in ("load", "gather"))
                   for n in ast.walk(test))

    def exit_test(self, s: ast.While):
        """The top of a ``loop`` iteration for ``while s.test:``: the test's value (a bool
        scalar, or a 0-d bool tile as :meth:`condition` reads it), the loop's carried tokens
        updated to the test's own (its atomic's token orders the body and what follows the
        loop), then ``if c {} else { break; }``."""
        c, cty = self.condition(s.test)
        if cty.kind != "bool":
            self.fail(s, "while " + ast.unparse(s.test), "the condition must be a bool: a comparison "
                                                         "of an atomic's or a load's 0-d result with "
                                                         "a scalar")
        self.carry_before_exit()
        self.out.emit(f"if {c} {{", s.lineno)
        self.out.emit("} else {", s.lineno)
        self.out.indent += 1
        self.out.emit("break;", s.lineno)
        self.out.indent -= 1
        self.out.emit("}", s.lineno)

    def if_expr(self, node: ast.IfExp) -> tuple[str, Ty]:
        """``a if c else b``: the branch a constexpr test takes, or a Rust ``if`` expression
        (cutile's ``if`` op yielding the value)."""
        if self.is_static_test(node.test):
            taken = eval(compile(ast.Expression(node.test), self.file, "eval"),  # noqa: S307
                         {"__builtins__": {}}, self.static_env())
            return self.expr(node.body if taken else node.orelse)
        mark = len(self.out.lines)
        c, cty = self.condition(node.test)
        if cty.kind == "lit" and len(self.out.lines) == mark:    # decided at compile time
            return self.expr(node.body if cty.value else node.orelse)
        if cty.kind != "bool":
            self.fail(node, ast.unparse(node), "the condition must be a comparison of int32 scalars")
        head = self.out.emit("", self.line)
        self.out.indent += 1
        a, at = self.expr(node.body)
        a_line = self.out.emit("", self.line)
        self.out.indent -= 1
        mid = self.out.emit("} else {", self.line)
        self.out.indent += 1
        b, bt = self.expr(node.orelse)
        b_line = self.out.emit("", self.line)
        self.out.indent -= 1
        ty = at if at.kind != "lit" else bt
        if ty.kind == "lit":
            ty, _ = self.lit_scalar(ty)
        if ty.kind not in ("i32", "f32") or {at.kind, bt.kind} - {"lit", ty.kind}:
            self.fail(node, ast.unparse(node), f"branches of kinds {at.kind}/{bt.kind}: only int32 "
                                               f"or f32 scalars are translated")
        self.out.lines[a_line][1] = self.scalar_as(a, at, ty.kind, node)
        self.out.lines[b_line][1] = self.scalar_as(b, bt, ty.kind, node)
        name = self.fresh("t")
        self.out.lines[head][1] = f"let {name}: {ty.rust()} = if {c} {{"
        self.out.emit("};", self.line)
        del mid
        return name, ty

    def kernel_returns_early(self) -> bool:
        """Does the kernel ``return`` before its end (``if bid >= n: return``)?"""
        return any(isinstance(n, ast.Return) for s in self.fn.body[:-1] for n in ast.walk(s)) or (
            bool(self.fn.body) and not isinstance(self.fn.body[-1], ast.Return)
            and any(isinstance(n, ast.Return) for n in ast.walk(self.fn.body[-1])))

    @staticmethod
    def is_guard(s) -> bool:
        """``if <test>: ...; return`` with no ``else`` and no other ``return`` in it: a guard
        clause."""
        return (isinstance(s, ast.If) and not s.orelse and bool(s.body)
                and isinstance(s.body[-1], ast.Return) and s.body[-1].value is None
                and not any(isinstance(n, ast.Return) for st in s.body[:-1] for n in ast.walk(st)))

    def guard_clauses(self, body) -> bool:
        """Are the kernel body's early returns all guard clauses at its top level
        (``if num_tokens <= 0: return``)? Then each becomes ``if c { ... } else { <the rest of
        the kernel> }`` (:meth:`block`), not a ``return`` inside the once-run ``loop`` of
        :meth:`early_return`: with that loop around the body, tileiras 13.4 lost what the guards
        tell about the values after them (tg_moe_actgrad_bwd h256, sm_90 SASS with the run-time
        alignment facts: the `n_offs < intermediate_dim` select kept, 132 FSEL against the
        reference's 4, 5136 instructions against 4624 and a 320-byte stack against 192; with
        the guards as ifs, 4632 instructions, 4 FSEL, the same stack)."""
        return all(self.is_guard(s) or (isinstance(s, ast.Return) and s is body[-1])
                   or not any(isinstance(n, ast.Return) for n in ast.walk(s)) for s in body)

    def early_return(self, s: ast.Return):
        """``return`` before the kernel's end: cuTile Python ends the branch with Tile IR's
        ``return`` (the ``if`` yields only from the branches that go on). cutile 0.5.0 lowers a
        ``return`` only at the top of a function body or inside a ``loop`` (cutile-compiler
        0.5.0 ``compile_block.rs``: "`return` is only supported at the top level of a function
        body" unless ``innermost_loop == Loop``), so the driver wraps such a kernel's body in a
        ``loop { ... return; }`` that runs once (unless every early return is a guard clause:
        :meth:`guard_clauses`); the IR diff reads a loop without carried values
        whose body ends in ``return`` as its body (``single_pass_loops``). A ``return`` inside a
        ``for`` loop (cuTile Python rewrites the loop, ``lower_for_with_return``) is not
        translated."""
        if any(kind == "for" for kind in getattr(self, "loop_kinds", [])):
            self.fail(s, "return", "a return inside a for loop (cuTile Python rewrites the loop "
                                   "around it) is not translated; cutile 0.5.0 lowers no return "
                                   "inside a for (compile_block.rs: !ctx.inside_for)")
        self.out.emit("return;", s.lineno)

    def loop_continue(self, s: ast.Continue):
        """``continue`` in a loop body: Rust's ``continue``, which cutile 0.5.0 lowers to Tile IR's
        ``continue`` yielding the loop's carried values (cutile-compiler-0.5.0
        src/compiler/compile_block.rs:354-367), as cuTile Python ends the branch (Liger's TVD:
        ``if lbl == ignore_index: ...; continue``); the loop's carried tokens take the current
        ones first (:meth:`carry_before_exit`). Inside a run-time ``if`` cutile yields the
        ``if``'s captured names with it (compile_expression.rs:2989-2998, the loop's carried
        names first): a branch that assigns a Rust variable declared in the loop body would yield
        more values than the loop carries (not checked here: rust_ir reports the Tile IR
        verifier's error, owner ``tool``)."""
        if not getattr(self, "loop_kinds", []) or self.inlining:
            self.fail(s, "continue", "a continue outside a loop body of the kernel is not translated")
        self.carry_before_exit()
        self.out.emit("continue;", s.lineno)

    def static_assert(self, call: ast.Call):
        """``ct.static_assert(condition, message)``: evaluated for this entry's constexpr values
        as cuTile Python evaluates it when it compiles a variant (its constexprs are
        specialised); true emits nothing (a comment), false is the kernel's error (cuTile Python
        raises StaticAssertionError with the message: owner ``kernel``) and no port is written;
        a condition this entry cannot decide at compile time has no rule (owner ``tool``)."""
        if not 1 <= len(call.args) <= 2 or call.keywords:
            self.fail(call, "ct.static_assert", "expects (condition[, message]) positionally")
        cond = call.args[0]
        if not self.is_static_test(cond):
            self.fail(call, f"ct.static_assert({ast.unparse(cond)})",
                      "the condition is not known at compile time in this entry (the translator "
                      "evaluates constexprs, module constants, literals and arithmetic and "
                      "comparisons of them)")
        env = self.static_env()
        if eval(compile(ast.Expression(cond), self.file, "eval"), {"__builtins__": {}}, env):  # noqa: S307
            self.out.emit(f"// ct.static_assert({ast.unparse(cond)}): true for this entry", call.lineno)
            return
        msg = ""
        if len(call.args) == 2:
            try:
                msg = str(eval(compile(ast.Expression(call.args[1]), self.file, "eval"),  # noqa: S307
                               {"__builtins__": {"str": str, "repr": repr}}, env))
            except Exception:       # noqa: BLE001 -- a message that needs more than constants
                msg = ast.unparse(call.args[1])
        values = ", ".join(f"{k}={v}" for k, v in self.spec.items() if not k.startswith("__"))
        exc = Unsupported(self.file, call.lineno, f"ct.static_assert({ast.unparse(cond)})",
                          f"false for this entry's constexprs ({values}): cuTile Python raises "
                          f"StaticAssertionError: {msg}; the kernel's constexprs break its own "
                          f"compile-time check (fix the manifest's values or the kernel)")
        exc.owner = "kernel"
        raise exc

    def static_if(self, s: ast.If):
        """``if`` on constexprs: cuTile evaluates it when it compiles a variant, so this entry
        (specialised for those constexpr values) keeps only the branch taken, inline (a Python
        ``if`` opens no scope)."""
        if not self.is_static_test(s.test):
            self.fail(s, "if " + ast.unparse(s.test), "not a compile-time test")
        taken = eval(compile(ast.Expression(s.test), self.file, "eval"),  # noqa: S307
                     {"__builtins__": {}}, self.static_env())
        self.out.emit(f"// if {ast.unparse(s.test)}: {bool(taken)} for this entry", s.lineno)
        self.block(s.body if taken else s.orelse)

    def for_loop(self, s: ast.For):
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords and isinstance(s.target, ast.Name)
                and not s.orelse):
            self.fail(s, "for " + ast.unparse(it), "only `for <name> in range(...)` is translated")
        bounds = [self.const_value(a) for a in it.args]
        self.specialise_empty_range(it.args, bounds)
        if all(type(b) is int for b in bounds) and (len(bounds) < 3 or bounds[2] != 0) \
                and not range(*bounds):
            # a range empty at compile time (Liger's KL-div with N_FULL_CHUNKS 0: `for ci in
            # range(0)`): the body never runs, every name keeps its value (EMPTY_RANGE_NOTE)
            self.out.emit(f"// for {ast.unparse(s.target)} in {ast.unparse(it)}: {EMPTY_RANGE_NOTE}",
                          s.lineno)
            return
        args = [self.int_expr(a) for a in it.args]
        var = self.local_prefix + self.rname(s.target.id)
        split = self.loop_split(s)
        if split is not None:
            self.split_loop(s, args, var, *split)
            return
        if len(args) == 1:
            head = f"for {var} in 0i32..{args[0]} {{"
        elif len(args) == 2:
            head = f"for {var} in {args[0]}..{args[1]} {{"
        else:
            head = f"for {var} in ({args[0]}..{args[1]}).step_by(({args[2]}) as usize) {{"
        self.emit_for(s, head, var)

    def specialise_empty_range(self, args, bounds) -> None:
        """A ``range`` bound that is an int constexpr kept as a const generic, under which some
        variant of this entry gets an empty range: the entries are specialised on it
        (:class:`NeedConst`), so that only the entries whose range is empty leave the loop out
        (cutile 0.5.0 cannot write it: see :data:`EMPTY_RANGE_NOTE`)."""
        if all(type(b) is int for b in bounds):
            return
        names = [a.id if isinstance(a, ast.Name) and b is None else None for a, b in zip(args, bounds)]
        variants = getattr(self, "entry_constexprs", [])
        for cx in variants:
            vals = [b if type(b) is int else cx.get(n) for b, n in zip(bounds, names)]
            if all(type(v) is int for v in vals) and (len(vals) < 3 or vals[2] != 0) and not range(*vals):
                for a, n in zip(args, names):
                    var = self.lookup(n) if n is not None else None
                    if var is not None:
                        self.need_constexpr_value(var.ty, a)
                return

    # ---- loop splitting (cuTile Python's loop_split pass) ------------------------------
    FLIP = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}

    def loop_split(self, s: ast.For):
        """cuTile Python splits a ``for`` loop of step 1 in two where its body holds exactly one
        run-time ``if`` (directly, or under compile-time ``if``s) whose test is ``i <op> n`` /
        ``n <op> i`` (``<``, ``<=``, ``>``, ``>=``; ``i`` the loop variable, ``n`` a run-time
        value the loop does not change: see :meth:`loop_invariant_int`; compile-time operands of
        ``and`` / ``or`` folded away; a step known here to be 1: a constexpr step of an entry
        not specialised on it is not split, a limit of this rule):
        one loop where the test is false, one where it is true, each with that branch only
        (cuda-tile 1.7.0 ``_passes/loop_split.py``). Returns (the ``if``, the comparison with
        ``i`` on the left: an ``ast.cmpop`` class, the bound's expression) or None."""
        assigned = {t.id for st in s.body for t in ast.walk(st)
                    if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        found = []

        def scan(stmts):
            for st in stmts:
                if not isinstance(st, ast.If):
                    continue
                test = self.split_test(st.test)
                if test is not None and test[0] == "lit":      # folded: the branch inline
                    scan(st.body if test[1] else st.orelse)
                    continue
                cmp = test[1] if test is not None else None
                if cmp is None or len(cmp.ops) != 1 or type(cmp.ops[0]) not in self.FLIP:
                    continue
                left, right, op = cmp.left, cmp.comparators[0], type(cmp.ops[0])
                if isinstance(right, ast.Name) and right.id == s.target.id:
                    left, right, op = right, left, self.FLIP[op]
                if not (isinstance(left, ast.Name) and left.id == s.target.id
                        and self.loop_invariant_int(right, s.target.id, assigned)):
                    continue
                found.append((st, op, right))
        scan(s.body)
        if len(found) != 1:
            return None
        it = s.iter
        if len(it.args) == 3:
            step = it.args[2]
            if not (self.is_static_test(step) and eval(compile(ast.Expression(step), self.file, "eval"),  # noqa: S307
                                                       {"__builtins__": {}}, self.static_env()) == 1):
                return None
        return found[0]

    def loop_invariant_int(self, node, target: str, assigned: set) -> bool:
        """Is ``node`` an int32 value the loop does not change: a name bound before the loop
        (an int32 scalar or 0-d int32 tile) or compile-time, or arithmetic of those and int
        literals (cuTile Python computes such an operand once, outside the loop, and its
        loop_split pass compares the index with it)?"""
        env = self.static_env()
        constexprs = {p["name"] for p in self.params if p["kind"] == "constexpr"}
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                if n.id == target or n.id in assigned:
                    return False
                var = self.lookup(n.id)
                if var is None:
                    if n.id not in env and n.id not in constexprs:
                        return False
                elif not (var.ty.kind in ("i32", "lit") or (
                        var.ty.kind == "tile" and var.ty.shape == () and var.ty.dtype == "i32")):
                    return False
            elif isinstance(n, ast.Constant):
                if type(n.value) is not int:
                    return False
            elif not isinstance(n, (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)):
                return False
        return True

    def split_test(self, test):
        """What an ``if`` test reduces to once its compile-time ``and`` / ``or`` operands are
        folded (as :meth:`bool_chain` folds them): ``("lit", value)``, ``("cmp", comparison)``
        or None (a run-time bool made otherwise)."""
        if self.is_static_test(test):
            return "lit", eval(compile(ast.Expression(test), self.file, "eval"),  # noqa: S307
                               {"__builtins__": {}}, self.static_env())
        if isinstance(test, ast.Compare):
            return "cmp", test
        if not isinstance(test, ast.BoolOp):
            return None
        is_and = isinstance(test.op, ast.And)
        last = len(test.values) - 1
        for i, v in enumerate(test.values):
            r = self.split_test(v)
            if r is not None and r[0] == "lit" and i < last and bool(r[1]) == is_and:
                continue
            return r if (i == last or (r is not None and r[0] == "lit")) else None
        return None

    def split_loop(self, s: ast.For, args: list, var: str, if_node: ast.If, op, bound: ast.expr):
        """Emit the two loops of :meth:`loop_split`: ``start..min(stop, b)`` then
        ``max(start, b)..stop`` (``b`` the bound, plus one for ``<=`` / ``>``), the second
        carrying on the first's values; in each the ``if`` is replaced by the branch it takes
        there (the test itself is not emitted)."""
        start, stop = (args[0], args[1]) if len(args) > 1 else ("0i32", args[0])
        if op in (ast.Gt, ast.LtE):
            bound = ast.copy_location(ast.BinOp(left=bound, op=ast.Add(), right=ast.copy_location(
                ast.Constant(1), bound)), bound)
        b = self.int_expr(bound)
        first_stop = self.int_expr_of(self.int_binary("min", None, None, bound, values=(
            (stop, Ty("i32")), (b, Ty("i32")))))
        second_start = self.int_expr_of(self.int_binary("max", None, None, bound, values=(
            (start, Ty("i32")), (b, Ty("i32")))))
        below = "then" if op in (ast.Lt, ast.LtE) else "else"
        for branch, head in ((below, f"for {var} in {start}..{first_stop} {{"),
                             ("else" if below == "then" else "then",
                              f"for {var} in {second_start}..{stop} {{")):
            # (a plain attribute, looked up afresh: a dry run of the tokens restores copies)
            outer = getattr(self, "flat_ifs", {})
            self.flat_ifs = {**outer, id(if_node): branch}
            try:
                self.emit_for(s, head, var)
            finally:
                self.flat_ifs = outer

    def emit_for(self, s: ast.For, head: str, var: str):
        """The ``for`` loop opened by ``head`` with ``s``'s body (tokens carried through it)."""

        def body():
            self.out.indent += 1
            self.scopes.append({s.target.id: Var(var, Ty("i32"), None, len(self.scopes))})
            self.loop_kinds = getattr(self, "loop_kinds", []) + ["for"]
            self.__dict__.setdefault("cont", []).append(("loop", s.body))
            try:
                self.block(s.body)
            finally:
                self.loop_kinds = self.loop_kinds[:-1]
                self.cont.pop()
            self.scopes.pop()
            self.out.indent -= 1
        self.tokened_loop(head, body, s.lineno, ivar=var)

    # ---- helper functions ----------------------------------------------------------
    def inline_call(self, node: ast.Call, statement: bool = False):
        """A call of a module-level Python function (a helper of the kernel): its body inlined
        at the call site, as cuTile Python compiles it (the Tile IR has no calls). Arguments
        bind the parameters (defaults: literals); the helper's names are its own (Rust names
        prefixed, so they shadow nothing of the caller); its last statement must be
        ``return value`` (or ``return a, b``: a tuple for ``x, y = helper(...)``), except for a
        helper called as a statement (``statement``: its value, if any, is dropped), which may
        end without one (a helper that stores its results: TileGym's ``fmha_kernel_impl``)."""
        fn = self.module_functions[node.func.id]
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            self.fail(node, ast.unparse(node)[:60], "helpers with *args, **kwargs or keyword-only "
                                                    "parameters are not inlined")
        if len(self.inlining) >= 8 or fn.name in self.inlining:
            self.fail(node, ast.unparse(node)[:60], "recursive helper calls are not translated")
        params = [p.arg for p in a.args]
        defaults = dict(zip(params[len(params) - len(a.defaults):], a.defaults))
        given = dict(zip(params, node.args))
        for k in node.keywords:
            if k.arg not in params or k.arg in given:
                self.fail(node, ast.unparse(node)[:60], f"argument '{k.arg}' does not match {fn.name}()")
            given[k.arg] = k.value
        scope = {}
        # the helper's Rust names: its own prefix, its parameters included (cutile orders the
        # values a loop carries by Rust name, cuTile Python by Python name: the same order)
        prefix = f"__{fn.name.strip('_')}{self.tmp + 1}_"
        for p in params:
            arg = given.get(p, defaults.get(p))
            if arg is None:
                self.fail(node, ast.unparse(node)[:60], f"{fn.name}() is missing argument '{p}'")
            e, ty = self.expr(arg)
            decl = None
            if ty.kind in ("tile", "i32", "f32", "bool"):
                tmp = prefix + self.rname(p)
                decl = self.out.emit(f"let {tmp}: {ty.rust()} = {e};", self.line)
                e = tmp
            scope[p] = Var(e, ty, decl, 0)          # a value parameter the helper may rebind
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]                              # docstring
        if statement and not (body and isinstance(body[-1], ast.Return) and body[-1].value is not None):
            # no value to give: the whole body runs, a final bare `return` included
            body = [*(body[:-1] if body and isinstance(body[-1], ast.Return) else body),
                    ast.Return(value=None, lineno=fn.lineno)]
        elif not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
            self.fail(fn, f"def {fn.name}", "an inlined helper must end with `return value`")
        early = statement and self.helper_guard_returns(fn, body)
        for s in body[:-1]:
            if not early and any(isinstance(n, ast.Return) for n in ast.walk(s)):
                self.fail(s, f"def {fn.name}", "an early return in a helper is not translated")
        saved = (self.scopes, self.local_prefix, self.line)
        self.scopes, self.local_prefix = [scope], prefix
        self.inlining.append(fn.name)
        try:
            self.__dict__.setdefault("cont", []).append(("helper", body[-1:]))
            try:
                if early:
                    self.helper_return_loop(body[:-1], node.lineno)
                else:
                    self.block(body[:-1])
            finally:
                self.cont.pop()
            self.line = body[-1].lineno
            ret = body[-1].value
            if ret is None:
                return None
            if isinstance(ret, ast.Tuple):
                return [self.expr(e) for e in ret.elts]
            return self.expr(ret)
        finally:
            self.inlining.pop()
            self.scopes, self.local_prefix, _ = saved
            self.line = saved[2]

    def helper_guard_returns(self, fn: ast.FunctionDef, body: list) -> bool:
        """Does a helper called as a statement return early only through guard clauses at its top
        level (``if start_m >= seq_len_q: return``, FlashInfer's prefill bodies)? Other early
        returns (nested, inside a loop, with statements before them) stay refused."""
        guards = [s for s in body[:-1] if any(isinstance(n, ast.Return) for n in ast.walk(s))]
        return bool(guards) and all(isinstance(s, ast.If) and not s.orelse and len(s.body) == 1
                                    and isinstance(s.body[0], ast.Return) and s.body[0].value is None
                                    for s in guards)

    def helper_return_loop(self, stmts: list, line: int) -> None:
        """The body of a helper called as a statement that returns early through guard clauses
        (:meth:`helper_guard_returns`): cuTile Python inlines such a helper as a ``loop`` that
        runs once, each ``return`` a ``break`` (yielding the memory tokens of that point) and a
        final ``break`` at the end (seen in its Tile IR: ``loop iter_values(tokens) { if c {
        break } else {} ... break }``). The port writes the same: a Rust ``loop`` whose carried
        tokens :meth:`tokened_loop` threads, ``if c { break; }`` per guard (:meth:`guard_break`)
        and ``break;`` at its end; where the helper ends the kernel, that last break yields fresh
        tokens (``new_token_unordered``, Tile IR's ``make_token``) as cuTile Python's does."""
        # nothing runs after the loop (the helper ends the kernel): no op reads the tokens
        # its last break yields, and cuTile Python yields fresh ones (make_token) there
        tail = all(not (e[1] if isinstance(e, tuple) else e) or (
            isinstance(e, tuple) and e[0] == "helper" and all(isinstance(x, ast.Return) for x in e[1]))
            for e in self.__dict__.get("cont", []))

        def looped():
            self.out.indent += 1
            self.scopes.append({})
            self.helper_loops = getattr(self, "helper_loops", 0) + 1
            try:
                self.block(stmts)
                if tail and self.loop_ctx is not None:
                    for key, name in self.loop_ctx.carried.items():
                        self.tok_pure[self.out.emit(f"{name} = new_token_unordered();", line)] = name
                        self.tok_map[key] = name
                else:
                    self.carry_before_exit()
                self.out.emit("break;", line)
            finally:
                self.helper_loops -= 1
                self.scopes.pop()
                self.out.indent -= 1
        self.tokened_loop("loop {", looped, line)

    def guard_break(self, s: ast.If) -> None:
        """``if c: return`` in a helper inlined as a once-run loop: ``if c { break; } else {}``
        with the loop's carried tokens updated first (:meth:`carry_before_exit`)."""
        c, cty = self.condition(s.test)
        if cty.kind != "bool":
            self.fail(s, "if " + ast.unparse(s.test), "the condition must be a comparison of int32 scalars")
        self.carry_before_exit()
        self.out.emit(f"if {c} {{", s.lineno)
        self.out.indent += 1
        self.out.emit("break;", s.body[0].lineno)
        self.out.indent -= 1
        self.out.emit("} else {", s.lineno)
        self.out.emit("}", s.lineno)

    # ---- launch grid ---------------------------------------------------------------
    def grid_block_id(self, node) -> tuple[str, Ty]:
        self.need_pid = True
        return f"__pid.{self.axis_lit(node)}", Ty("i32")

    def grid_num_blocks(self, node) -> tuple[str, Ty]:
        self.need_nblk = True
        return f"__nblk.{self.axis_lit(node)}", Ty("i32")

    def axis_lit(self, node) -> int:
        """The grid axis of ``ct.bid`` / ``ct.num_blocks``, positional or ``axis=``: any int
        known at compile time (a literal, a constexpr, a module constant, a name bound to one,
        arithmetic on those), as cuTile Python requires a constant axis and folds it."""
        self.check_kwargs(node, {"axis"})
        a = self._kw(node, "axis", 0)
        if a is None or len(node.args) + len(node.keywords) != 1:
            self.fail(node, ast.unparse(node), "the grid axis is one argument (axis=0, 1 or 2)")
        _, ty = self.expr(a)
        if not (ty.kind == "lit" and type(ty.value) is int and ty.value in (0, 1, 2)):
            self.fail(node, ast.unparse(node), "grid axis must be 0, 1 or 2, known at compile time")
        return ty.value
