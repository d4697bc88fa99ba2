"""Loop-invariant code motion: the values of a ``for`` body that the loop cannot change are
computed before the loop, as cuTile Python's compiler computes them.

cuda-tile 1.7.0 runs ``hoist_loop_invariants`` (``cuda/tile/_passes/code_motion.py``, called from
``_compile.py`` ``_transform_ir`` after its token-order pass and its fma rewrite) on every kernel:
an op without an observable effect (no store, atomic, print or assert; loads included) whose
operands are all defined outside a loop moves out of it, as far out as its operands allow. A
load whose token comes from a store in the loop stays (the token orders it). cutile 0.5.0
compiles the Rust where it stands and tileiras 13.4 does not hoist either, so a port written
line by line ran its invariant loads and index arithmetic on every trip
(docs/results/sass-causes-2026-12-06.md: moving them by hand made the matched SASS of fna
``_fna_bwd_dq_kernel`` and multi-token attention's softmax backward identical to the
reference's).

The port does the same on the Rust it has written for one entry (:func:`hoist_invariant_lets`),
after the translator has chosen its tokens and fma contractions, so both sides move the same
ops: a ``let`` directly in a ``for`` body (one op, or a view of one) moves before the loop when
its value reads no name the loop binds and has no effect. A load reads its token by name: a
token the loop carries (the array is stored in the loop) keeps it there, the tensor's own
token (``get_tensor_token``) does not. ``if`` blocks inside the body keep their lines (cuTile
Python moves ops out of loops only), and so do cutile's ``loop`` blocks.

cuTile Python moves ops, not statements: in ``channel_idx = group_idx * 4 + c`` inside a loop over
``c``, the product moves and the sum stays. The port writes scalar index arithmetic as nested
Rust operations inside one ``let`` (``((group_idx * 4i32) + c_in_group)``, also as a call's
argument: ``scalar_to_tile(((bid * n_tiles) + i))``), so a ``let`` that stays gives up its
loop-invariant parts (:func:`invariant_parts`): each largest sub-expression written with
``+ - * / %`` alone, of one scalar type, that reads a run-time value and nothing the loop binds,
becomes a ``let __inv<n>`` before the loop, in the order the ops are evaluated (liger
group_norm's forward computed ``group_idx * 4`` and ``batch_idx * 12`` on each trip of its
loop, and its matched sm_90 SASS differed from the reference's).
"""
from __future__ import annotations

import itertools
import re

#: a Rust ``let`` line of the port: ``let [mut] name: Type = value;`` or ``let (a, b): (..) = value;``
_LET = re.compile(r"let (mut )?(\w+|\([\w, ]+\))\s*:\s.*? = (.*);$")
#: the names any ``let`` line declares (also one whose value goes on over several lines)
_LET_NAMES = re.compile(r"let (?:mut )?(.+?)\s*(?::|=)")
#: the part of a statement left of an assignment (``=``, ``+=``, ``<<=``, ...; not ``==``, ``<=``,
#: ``=>``): the names in it are values the loop changes
_ASSIGNED = re.compile(r"^(.*?[^=!<>])(?:[-+*/%&|^]|<<|>>)?=(?![=>])")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
#: calls in a port's ``let`` value with an effect, or that make a fresh token: kept in place
_EFFECT = re.compile(r"store|atomic|_mut\b|print|assert|new_token")
#: a ``let`` of a scalar type: its name and type (any value)
_SCALAR_DECL = re.compile(r"let (?:mut )?(\w+): ([iuf](?:8|16|32|64)) = ")
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:[a-z]\w*)?)|([A-Za-z_]\w*)|([-+*/%()]))")
_SUFFIX = re.compile(r"[\d.]+(?:[eE][-+]?\d+)?([iuf](?:8|16|32|64))$")


def _parse(text: str, types: dict):
    """The operation tree of an arithmetic expression (names, literals, ``+ - * / %``, unary
    ``-``, parentheses; usual precedence, left-associative) as nested ``(start, end, names,
    compound, paren, type, children)`` spans of ``text``; ``type`` the scalar type all its
    leaves share (``types``: a name's; a literal's suffix; an unsuffixed literal takes any), None
    where they differ or one is unknown. None when ``text`` is not such an expression."""
    toks, pos = [], 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        toks.append((m.start(m.lastindex), m.end(), m.lastindex, m.group(m.lastindex)))
        pos = m.end()
    i = 0

    def peek():
        return toks[i][3] if i < len(toks) else None

    def join(*ts):
        known = {t for t in ts if t != "any"}
        return None if None in known or len(known) > 1 else (known.pop() if known else "any")

    def primary():
        nonlocal i
        if i >= len(toks):
            raise ValueError
        start, end, kind, tok = toks[i]
        i += 1
        if kind == 1:
            m = _SUFFIX.match(tok)
            return (start, end, frozenset(), False, False, m.group(1) if m else "any", ())
        if kind == 2:
            return (start, end, frozenset([tok]), False, False, types.get(tok), ())
        if tok == "-":
            inner = primary()
            return (start, inner[1], inner[2], True, False, inner[5], (inner,))
        if tok != "(":
            raise ValueError
        inner = binary(0)
        if peek() != ")":
            raise ValueError
        i += 1
        return (start, toks[i - 1][1], inner[2], inner[3], True, inner[5], (inner,))

    def binary(level):
        nonlocal i
        left = binary(1) if level == 0 else primary()
        while peek() is not None and peek() in ("+-", "*/%")[level]:
            i += 1
            right = binary(1) if level == 0 else primary()
            left = (left[0], right[1], left[2] | right[2], True, False, join(left[5], right[5]), (left, right))
        return left

    try:
        tree = binary(0)
    except (ValueError, RecursionError):
        return None
    return tree if i == len(toks) else None


def _closing(text: str, at: int) -> int:
    """The index of the bracket that closes the one at ``text[at]``; -1 when none does."""
    depth = 0
    for j in range(at, len(text)):
        if text[j] in "([{":
            depth += 1
        elif text[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _top_level_split(text: str, start: int, end: int) -> list:
    """The comma-separated items of ``text[start:end]`` (brackets nested inside kept whole), as
    stripped ``(start, end)`` spans."""
    items, depth, at = [], 0, start
    for j in range(start, end + 1):
        c = text[j] if j < end else ","
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            lo, hi = at, j
            while lo < hi and text[lo].isspace():
                lo += 1
            while hi > lo and text[hi - 1].isspace():
                hi -= 1
            if hi > lo:
                items.append((lo, hi))
            at = j + 1
    return items


def invariant_parts(value: str, varying: set, runtime: set, types: dict) -> list:
    """The largest arithmetic sub-expressions of a ``let``'s ``value`` that the loop cannot change:
    written with names, literals, ``+ - * / %`` and parentheses alone, all of one scalar type
    (``types``: name -> Rust scalar type), reading at least one name of ``runtime`` (a value
    computed at run time, not only constants) and none of ``varying``, with at least one
    operation; found in the value itself (never the whole of it) and in the arguments of the
    calls and index lists it holds. ``[(start, end, type)]`` spans of ``value``, left to right."""
    out = []
    if re.search(r'["\'|]|//|/\*', value):
        return out          # strings, chars, closures, comments: not the translator's arithmetic

    def walk(node, root, base):
        start, end, names, compound, paren, typ, children = node
        if not root and compound and not names & varying and names & runtime and typ not in (None, "any"):
            out.append((base + start, base + end, typ))
            return
        for child in children:
            walk(child, root and paren, base)

    def scan(lo, hi, whole):
        tree = _parse(value[lo:hi], types)
        if tree is not None:
            walk(tree, whole, lo)
            return
        j = lo
        while j < hi:
            c = value[j]
            if c in "([":
                k = _closing(value, j)
                if k < 0 or k >= hi:
                    return
                before = value[lo:j].rstrip()
                call = c == "[" or (before != "" and (before[-1].isalnum() or before[-1] in "_!>"))
                tree = None if call else _parse(value[j:k + 1], types)
                if tree is not None:        # a parenthesised expression
                    walk(tree, False, j)
                else:                       # a call's arguments, an index list, a tuple: each item
                    for a, b in _top_level_split(value, j + 1, k):
                        scan(a, b, False)
                j = k + 1
            elif c == "{":
                k = _closing(value, j)
                j = hi if k < 0 else k + 1
            else:
                j += 1

    scan(0, len(value), True)
    return out


def _is_for(ln) -> bool:
    return bool(ln[1]) and ln[1].startswith("for ") and ln[1].endswith("{")


def _loop_names(head: str) -> list:
    """The names a ``for`` head binds (its pattern: ``i``, ``(a, b)``, ``mut k``)."""
    return [w for w in _WORD.findall(head[4:].split(" in ", 1)[0]) if w != "mut"]


def hoist_invariant_lets(lines: list, params: dict | None = None, consts: dict | None = None) -> int:
    """Move the ``let`` lines of each ``for`` body that the loop cannot change before the loop,
    innermost loops first (module doc). ``lines``: one entry's ``[indent, text, python line]``
    (text None: a dropped line), changed in place; the lines that end up before a loop get a
    comment saying how many. A line stays when its value has an effect (a store, an atomic, a
    mutable view, a fresh token), reads a name the loop binds (its index, a name assigned in it in
    any form or passed as ``&mut``, a ``let`` that stays), declares a ``mut`` binding, or declares
    a name the entry binds twice (parameters, const generics and loop indices count);
    a ``let`` that stays gives up its invariant arithmetic (:func:`invariant_parts`) to ``let
    __inv<n>`` lines before the loop. ``params``: the entry's run-time scalar parameters, name ->
    Rust type (with the names ``let`` declares, the values an invariant part must read);
    ``consts``: its const generics, name -> type. Returns how many lines stand moved (the new
    ones included)."""
    # every binding of the entry: parameters, const generics, loop indices, lets (a name bound
    # twice is shadowed somewhere: a line declaring it stays where it is)
    declared: dict = {name: 1 for name in (params or {}) | (consts or {})}
    # the scalar type of each name the arithmetic may read (a name bound with two types, or with
    # one that is not a scalar: none)
    types: dict = dict(consts or {}) | dict(params or {})

    def bind(name, typ):
        declared[name] = declared.get(name, 0) + 1
        types[name] = typ if types.get(name, typ) == typ else None

    for ln in lines:
        text = ln[1].strip() if ln[1] else ""
        if _is_for(ln):
            bound = _SUFFIX.search(text.split(" in ", 1)[1].split("..")[0].strip())
            for name in _loop_names(text):
                bind(name, bound.group(1) if bound else None)
            continue
        m = _LET_NAMES.match(text)
        scalar = _SCALAR_DECL.match(text)
        for name in (_WORD.findall(m.group(1)) if m else ()):
            bind(name, scalar.group(2) if scalar and scalar.group(1) == name else None)
    runtime = set(declared) - set(consts or {})
    fresh = (f"__inv{k}" for k in itertools.count() if f"__inv{k}" not in declared)
    moved_ids, created = set(), set()
    # innermost first: a head's indent is its depth (sorted is stable: inner loops in their order)
    for head in sorted((ln for ln in lines if _is_for(ln)), key=lambda ln: -ln[0]):
        h = next(i for i, ln in enumerate(lines) if ln is head)
        depth = head[0]
        end = next(j for j in range(h + 1, len(lines))
                   if lines[j][0] == depth and lines[j][1] and lines[j][1].startswith("}"))
        body = lines[h + 1:end]
        varying = set(_loop_names(head[1]))
        for ln in body:
            text = ln[1].strip() if ln[1] else ""
            if not text or text.startswith(("let ", "//", "for ")):
                continue
            m = _ASSIGNED.match(text)
            varying.update(_WORD.findall(m.group(1)) if m else ())
            varying.update(re.findall(r"&mut\s+(\w+)", text))      # changed through a reference
        moved, kept = [], []
        for ln in body:
            text = ln[1].strip() if ln[1] and ln[0] == depth + 1 else ""
            m = _LET.match(text)
            pure = bool(m) and not _EFFECT.search(m.group(3))
            if pure and not m.group(1) and all(declared.get(n) == 1 for n in _WORD.findall(m.group(2))) \
                    and not varying & set(_WORD.findall(m.group(3))):
                ln[0] = depth
                moved.append(ln)
                moved_ids.add(id(ln))
                continue
            if pure:
                value, pieces, at = m.group(3), [], 0
                for a, b, typ in invariant_parts(value, varying, runtime, types):
                    name = next(fresh)
                    declared[name], types[name] = 1, typ
                    created.add(name)
                    expr = value[a:b]
                    if expr.startswith("(") and _closing(expr, 0) == len(expr) - 1:
                        expr = expr[1:-1]       # a let's value needs no parentheses (rustc warns)
                    part = [depth, f"let {name}: {typ} = {expr};", ln[2]]
                    moved.append(part)
                    moved_ids.add(id(part))
                    pieces += [value[at:a], name]
                    at = b
                if pieces:
                    ln[1] = ln[1].replace(text, text[:m.start(3)] + "".join(pieces) + value[at:] + ";")
            names = _LET_NAMES.match(text)
            varying.update(_WORD.findall(names.group(1)) if names else ())
            kept.append(ln)
        if moved:
            lines[h:end] = moved + [head] + kept
    # a note before the moved lines that stand before each loop (an outer loop may have taken on
    # what an inner one gave up)
    out = []
    for ln in lines:
        if _is_for(ln):
            run = 0
            while run < len(out) and id(out[len(out) - 1 - run]) in moved_ids:
                run += 1
            if run:
                out.insert(len(out) - run, [ln[0], f"// {run} value{'s' * (run > 1)} the loop below does not "
                                                   f"change, computed before it as cuTile Python's code motion does",
                                            ln[2]])
        out.append(ln)
    lines[:] = out
    # the new names numbered in the order they are declared (inner loops gave theirs up first)
    order = [m.group(1) for ln in lines if ln[1] for m in [re.match(r"let (__inv\d+):", ln[1])] if m
             and m.group(1) in created]
    names = dict(zip(order, sorted(created, key=lambda n: int(n[5:]))))
    if any(old != new for old, new in names.items()):
        for ln in lines:
            if ln[1] and "__inv" in ln[1]:
                ln[1] = re.sub(r"\b__inv\d+\b", lambda m: names.get(m.group(0), m.group(0)), ln[1])
    return len(moved_ids)
