"""Memory tokens: the order of loads and stores, threaded as cuTile Python threads it.

cuTile Python orders memory operations with tokens in its ``token_order`` pass (cuda-tile 1.7.0,
``cuda/tile/_passes/token_order.py``), then drops what nothing reads (``_passes/dce.py``). Every
array parameter is its own alias set (tileport compiles the reference with empty
``alias_groups``), and for each the pass keeps two tokens, *last op* and *last store*:

* a load (``ct.load``, ``ct.gather``) waits for the array's last store; its result token is
  joined eagerly into the array's last op (``join_tokens(last_op, result)``);
* a store (``ct.store``, ``ct.scatter``) or an atomic waits for the array's last op; its result
  token becomes both;
* an op with acquire semantics (an atomic's default ``ACQ_REL``) makes its token one every later
  op waits for; an op with release semantics waits for every array's last op;
* a ``for``/``while`` loop carries, for every array its body touches (in the order the body
  first touches them), the last-op token, and the last-store token too when the body stores
  to it; an ``if`` yields them likewise from both branches;
* a ``ct.store`` that is the only memory op on its array in a ``for`` body, at an index that
  is the loop variable itself, does not wait for the previous iteration: it waits for the
  array's last op before the loop, and its result is joined into the carried last op (the
  pass's "loop parallel store").

The port writes the same dataflow with cutile's explicit tokens: a view made from the token
the op waits for (``make_partition_view(..., token)``, ``make_partition_view_mut``), the view's
token after a load (``get_partition_token``), the token a store returns, ``join_tokens``, and
``Some(token)`` for the pointer ops. A token nothing reads is never written (cuTile Python's
dead-code pass removes it too). cutile carries a loop's or an ``if``'s mutated variables in the
order of their names (cutile-compiler 0.5.0 ``collect_mutated_variables``: a ``BTreeSet``), so a
carried token is a fresh variable named to sort after every Python name, in the reference's
order. Without this, a port that loads and then stores one array (an in-place kernel), or
stores in a loop, orders its memory differently and its IR diff fails on memory.
"""
from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field


@dataclass
class Effect:
    """One memory op met while translating: ``arr`` (the array's Rust name), ``kind`` ('load' /
    'store'), ``node`` (id of the call), ``region`` (the innermost loop body / branch it is in),
    ``tile_store`` (a ``ct.store``), ``index`` (its Rust index expressions), ``acquire`` (its
    memory order acquires)."""

    arr: str
    kind: str
    node: int
    region: int
    tile_store: bool = False
    index: tuple = ()
    acquire: bool = False


@dataclass
class LoopCtx:
    """The innermost ``for`` loop: its body region, the stores that run in parallel and the
    token map before the loop."""

    region: int
    parallel: set = field(default_factory=set)
    parent: dict = field(default_factory=dict)
    carried: dict = field(default_factory=dict)


# the key of the last acquiring op's token (``ACQUIRE_TOKEN_KEY``): every later op waits for it
ACQUIRE = "acquire"

# translation state that a dry run may read but never changes (shared, not restored)
_STATIC_STATE = {"fn", "params", "module_functions", "uses", "module_consts", "maths", "spec",
                 "dtypes", "file", "alias", "target", "entry", "cont",
                 "guard_tails",       # guard_tails: AST lists, matched by identity (control.block)
                 "_blocks"}           # _blocks: core.binding_uses' map of AST statements, by identity


class TokenRules:
    """Token order of memory ops (mixed into the driver's translator)."""

    CALLS: dict[str, str] = {}

    # ---- state ---------------------------------------------------------------------
    def _tok_init(self):
        if getattr(self, "tok_map", None) is None:
            self.tok_map: dict = {}          # (array rust name, 'op'|'store') -> token expression
            self.tok_pure: dict = {}         # line index -> token variable a pure line defines
            self.tok_names: set = set()      # every token variable
            self.effect_log: list = []       # stack of effect lists (dry runs and regions)
            self.region_stack: list = [0]
            self.region_seq = 0
            self.loop_ctx: LoopCtx | None = None
            self.carry_seq = 0
            self.tok_seq = 0
            self.carry_prefix = self._carry_prefix()
            self.tok_roots: dict = {}        # a view's Rust name -> its array's (share_tokens)

    def _carry_prefix(self) -> str:
        """``z`` repeated once more than the longest run of leading ``z`` in any name of the
        kernel and its helpers, then ``tok_``: sorts after every name the port gives a Python
        name (cutile orders carried variables by name)."""
        names = {n.id for n in ast.walk(self.fn) if isinstance(n, ast.Name)}
        names |= {a.arg for a in ast.walk(self.fn) if isinstance(a, ast.arg)}
        for h in self.module_functions.values():
            names |= {n.id for n in ast.walk(h) if isinstance(n, ast.Name)}
            names |= {a.arg for a in ast.walk(h) if isinstance(a, ast.arg)}
        run = max((len(n) - len(n.lstrip("z")) for n in names), default=0)
        return "z" * (run + 1) + "tok_"

    def share_tokens(self, view: str, arr: str):
        """A view of ``arr`` (``Array.slice``) orders its ops with ``arr``'s tokens: cuTile
        Python puts a sub-array in its array's alias set."""
        self._tok_init()
        self.tok_roots[view] = self.tok_root(arr)

    def tok_root(self, arr: str) -> str:
        """The array whose tokens ``arr`` (a parameter or a view of one) uses."""
        return getattr(self, "tok_roots", {}).get(arr, arr)

    def tok_of(self, arr: str, role: str) -> str:
        """The current token of ``arr``'s last op / last store (the tensor's own token, a
        ``make_token``, when nothing touched it yet)."""
        self._tok_init()
        arr = self.tok_root(arr)
        return self.tok_map.get((arr, role), self.first_token(arr))

    def first_token(self, arr: str) -> str:
        """The token of ``arr`` before any op on it: the tensor's own, or for a list of arrays
        (no tensor: :meth:`MemoryRules.list_element`) the fresh token bound for it."""
        return getattr(self, "list_tokens", {}).get(arr, f"get_tensor_token({arr})")

    def _tok_let(self, expr: str, pure: bool = True) -> str:
        self.tok_seq += 1                # a counter of its own: other names stay as they were
        name = f"__tk{self.tok_seq}"
        idx = self.out.emit(f"let {name}: Token = {expr};", self.line)
        self.tok_names.add(name)
        if pure:
            self.tok_pure[idx] = name
        return name

    def _record(self, eff: Effect):
        self._tok_init()
        for log in self.effect_log:
            log.append(eff)

    # ---- memory ops ----------------------------------------------------------------
    def _input_token(self, arr: str, role: str, release: bool = False, first: str | None = None) -> str:
        """The token an op on ``arr`` waits for (``_get_input_token``): the array's token of
        ``role``, joined with the last acquire's token when there is one and, for an op with
        release semantics, with every array's last op. ``first``: the array's token to use
        instead of its current one (a parallel store's)."""
        toks = [first or self.tok_of(arr, role)]
        for key, tok in self.tok_map.items():
            if (key == ACQUIRE or (release and key[1] == "op")) and tok not in toks:
                toks.append(tok)
        if len(toks) == 1:
            return toks[0]
        return self._tok_let(f"join_tokens(&[{', '.join(toks)}])")

    def load_token(self, arr: str, node, acquire: bool = False) -> str:
        """The token a load of ``arr`` waits for (its last store)."""
        self._tok_init()
        arr = self.tok_root(arr)
        self.__dict__.setdefault("accessed_arrays", set()).add(arr)
        self._record(Effect(arr, "load", id(node), self.region_stack[-1], acquire=acquire))
        return self._input_token(arr, "store")

    def loaded(self, arr: str, result: str, acquire: bool = False):
        """After a load of ``arr`` with result token ``result``: last op = join(last op, result);
        an acquiring load's token orders every later op."""
        arr = self.tok_root(arr)
        self.tok_map[(arr, "op")] = self._tok_let(f"join_tokens(&[{self.tok_of(arr, 'op')}, {result}])")
        if acquire:
            self.tok_map[ACQUIRE] = result

    def store_token(self, arr: str, node, tile_store: bool = False, index: tuple = (),
                    release: bool = False, acquire: bool = False) -> str:
        """The token a store (or atomic) on ``arr`` waits for: its last op, or for a parallel
        store of the innermost ``for`` loop the last op before the loop."""
        self._tok_init()
        arr = self.tok_root(arr)
        self.__dict__.setdefault("accessed_arrays", set()).add(arr)
        self._record(Effect(arr, "store", id(node), self.region_stack[-1], tile_store, tuple(index),
                            acquire))
        ctx = self.loop_ctx
        if ctx is not None and id(node) in ctx.parallel:
            before = ctx.parent.get((arr, "op"), self.first_token(arr))
            acq = self.tok_map.get(ACQUIRE)
            if acq is not None and acq != before:
                return self._tok_let(f"join_tokens(&[{before}, {acq}])")
            return before
        return self._input_token(arr, "op", release)

    def stored(self, arr: str, result: str, node, acquire: bool = False):
        """After a store (or atomic) on ``arr`` with result token ``result``."""
        arr = self.tok_root(arr)
        ctx = self.loop_ctx
        if ctx is not None and id(node) in ctx.parallel:
            result = self._tok_let(f"join_tokens(&[{self.tok_of(arr, 'op')}, {result}])")
        self.tok_map[(arr, "op")] = result
        self.tok_map[(arr, "store")] = result
        if acquire:
            self.tok_map[ACQUIRE] = result

    # ---- regions: loops and run-time ifs ---------------------------------------------
    def _dry_run(self, run) -> list:
        """Translate with ``run`` to learn its memory effects, then undo everything it emitted."""
        self._tok_init()
        outer = self.effect_log
        saved = {k: (v if k in _STATIC_STATE else copy.deepcopy(v)) for k, v in vars(self).items()
                 if k != "effect_log"}
        log: list = []
        self.effect_log = [log]          # a dry run's effects are its own (the real run records)
        try:
            run()
        finally:
            for k in list(vars(self)):
                if k not in saved:
                    delattr(self, k)
            for k, v in saved.items():
                setattr(self, k, v)
            self.effect_log = outer
        return log

    def _in_region(self, rid: int, run):
        self.region_stack.append(rid)
        try:
            run()
        finally:
            self.region_stack.pop()

    def _new_region(self) -> int:
        self._tok_init()
        self.region_seq += 1
        return self.region_seq

    @staticmethod
    def _carried_keys(effects: list) -> list:
        """Token keys a region carries, in the order cuTile Python appends them: per array in
        the order of its first effect, last op, then last store when any effect stores."""
        order: dict = {}
        for e in effects:
            order[e.arr] = order.get(e.arr, False) or e.kind == "store"
        keys = []
        for arr, stores in order.items():
            keys.append((arr, "op"))
            if stores:
                keys.append((arr, "store"))
        if any(e.acquire for e in effects):
            keys.append(ACQUIRE)
        return keys

    def _carry(self, keys: list) -> dict:
        """Fresh mutable token variables for ``keys``, starting from their current tokens."""
        out = {}
        for key in keys:
            self.carry_seq += 1
            name = f"{self.carry_prefix}{self.carry_seq:04d}"
            init = self.tok_map.get(key) if key == ACQUIRE else self.tok_of(*key)
            if init is None:            # no acquire before: the first op's own token (make_token)
                init = "new_token_unordered()"
            idx = self.out.emit(f"let mut {name}: Token = {init};", self.line)
            self.tok_pure[idx] = name
            self.tok_names.add(name)
            out[key] = name
        return out

    def _yield_carried(self, carried: dict, before: dict | None = None):
        """At the end of a loop body or branch: the carried variables take the current tokens
        (``before``: a branch's starting tokens, which its variable holds already)."""
        if self.out.lines and self.out.lines[-1][1] in ("return;", "continue;"):
            return                        # the branch returned or went to the next iteration: it yields nothing
        self.out.indent += 1
        for key, name in carried.items():
            cur = self.tok_map.get(key)
            if cur is not None and cur != name and cur != (before or {}).get(key):
                idx = self.out.emit(f"{name} = {cur};", self.line)
                self.tok_pure[idx] = name
        self.out.indent -= 1

    def tokened_loop(self, head: str, run_body, line: int, ivar: str | None = None):
        """Emit a loop (``head`` opens it, e.g. ``for i in 0i32..n {``; ``run_body`` translates
        the body, indented) with the tokens cuTile Python carries through it. ``ivar``: the Rust
        name of a ``for`` loop's induction variable (None for ``while``: no parallel stores)."""
        self._tok_init()
        rid = self._new_region()
        effects = self._dry_run(lambda: self._in_region(rid, lambda: self._loop_body(rid, run_body, None)))
        parallel = self._parallel_stores(effects, rid, ivar) if ivar is not None else set()
        parent = dict(self.tok_map)
        carried = self._carry(self._carried_keys(effects))
        self.tok_map.update(carried)
        self.out.emit(head, line)
        self._in_region(rid, lambda: self._loop_body(rid, run_body, LoopCtx(rid, parallel, parent, carried)))
        self._yield_carried(carried)
        self.out.emit("}", line)
        self.tok_map = {**parent, **carried}

    def carry_before_exit(self):
        """Before a ``break`` in the body of the innermost loop (a ``while`` whose test touches
        memory: :meth:`ControlRules.while_loop`) or a ``continue``: its carried token variables
        take the current tokens, which the ``break`` / ``continue`` yields (cuTile Python's
        ``break`` and ``continue`` yield the tokens of that point), and the ops after it read
        them from those variables."""
        ctx = self.loop_ctx
        for key, name in (ctx.carried if ctx is not None else {}).items():
            cur = self.tok_map.get(key)
            if cur is not None and cur != name:
                idx = self.out.emit(f"{name} = {cur};", self.line)
                self.tok_pure[idx] = name
                self.tok_map[key] = name

    def _loop_body(self, rid: int, run_body, ctx: LoopCtx | None):
        saved = self.loop_ctx
        self.loop_ctx = ctx if ctx is not None else LoopCtx(rid)
        try:
            run_body()
        finally:
            self.loop_ctx = saved

    @staticmethod
    def _parallel_stores(effects: list, rid: int, ivar: str) -> set:
        """The ``ct.store`` ops of a ``for`` body that cuTile Python runs in parallel: the only
        memory op on their array directly in the body, none in a nested region, at an index
        one of whose entries is the loop variable (``_get_parallel_stores``)."""
        out = set()
        for arr in dict.fromkeys(e.arr for e in effects):
            mine = [e for e in effects if e.arr == arr]
            direct = [e for e in mine if e.region == rid]
            if (len(direct) == 1 and len(mine) == 1 and direct[0].tile_store
                    and ivar in direct[0].index):
                out.add(direct[0].node)
        return out

    def tokened_if(self, head: str, run_then, run_else, line: int):
        """Emit a run-time ``if`` (``head`` opens it: ``if c {``) whose branches yield the tokens
        either branch changes (``run_else`` None: no else branch)."""
        self._tok_init()
        rt, re_ = self._new_region(), self._new_region()
        effects = self._dry_run(lambda: self._in_region(rt, run_then))
        if run_else is not None:
            effects += self._dry_run(lambda: self._in_region(re_, run_else))
        # the branches start from the tokens before the `if` (cuTile Python's branches read the
        # parent's token map; only the `if`'s results are new)
        before = dict(self.tok_map)
        carried = self._carry(self._carried_keys(effects))
        self.out.emit(head, line)
        self._in_region(rt, run_then)
        self._yield_carried(carried, before)
        if run_else is not None:
            self.tok_map = dict(before)
            self.out.emit("} else {", line)
            self._in_region(re_, run_else)
            self._yield_carried(carried, before)
        self.out.emit("}", line)
        self.tok_map = {**before, **carried}

    # ---- dead tokens -----------------------------------------------------------------
    def prune_tokens(self):
        """Drop the pure token lines (joins, carried variables and their updates) whose token
        no memory op reads, directly or through other tokens, as cuTile Python's dead-code
        pass does. Liveness is per variable name: a carried variable is kept when read in its
        loop or after it, as cuTile Python keeps a carried value whose body or result
        variable is used."""
        self._tok_init()
        if not self.tok_names:
            return
        word = re.compile(r"\b(" + "|".join(map(re.escape, sorted(self.tok_names))) + r")\b")
        reads: dict = {}              # token var -> token vars its pure definitions read
        live: set = set()
        for i, ln in enumerate(self.out.lines):
            if ln[1] is None:
                continue
            if i in self.tok_pure:
                d = self.tok_pure[i]
                rhs = ln[1].split("=", 1)[1]
                reads.setdefault(d, set()).update(word.findall(rhs))
            else:
                live.update(word.findall(ln[1]))
        work = list(live)
        while work:
            for r in reads.get(work.pop(), ()):
                if r not in live:
                    live.add(r)
                    work.append(r)
        for i, d in self.tok_pure.items():
            if d not in live:
                self.out.lines[i][1] = None
