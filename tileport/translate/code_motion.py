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
"""
from __future__ import annotations

import re

#: a Rust ``let`` line of the port: ``let [mut] name: Type = value;`` or ``let (a, b): (..) = value;``
_LET = re.compile(r"let (mut )?(\w+|\([\w, ]+\))\s*:\s.*? = (.*);$")
#: the names any ``let`` line declares (also one whose value goes on over several lines)
_LET_NAMES = re.compile(r"let (?:mut )?(\w+|\([\w, ]+\))")
#: a name a line assigns (a value the loop carries)
_ASSIGNED = re.compile(r"^(\w+)\s*[-+*/]?=\s")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
#: calls in a port's ``let`` value with an effect, or that make a fresh token: kept in place
_EFFECT = re.compile(r"store|atomic|_mut\b|print|assert|new_token")


def _is_for(ln) -> bool:
    return bool(ln[1]) and ln[1].startswith("for ") and ln[1].endswith("{")


def hoist_invariant_lets(lines: list) -> int:
    """Move the ``let`` lines of each ``for`` body that the loop cannot change before the loop,
    innermost loops first (module doc). ``lines``: one entry's ``[indent, text, python line]``
    (text None: a dropped line), changed in place; the lines that end up before a loop get a
    comment saying how many. A line stays when its value has an effect (a store, an atomic, a
    mutable view, a fresh token), reads a name the loop binds (its index, a name assigned in it, a
    ``let`` that stays), declares a ``mut`` binding, or declares a name the entry declares twice.
    Returns how many lines moved."""
    declared: dict = {}
    for ln in lines:
        m = _LET_NAMES.match(ln[1].strip()) if ln[1] else None
        for name in (_WORD.findall(m.group(1)) if m else ()):
            declared[name] = declared.get(name, 0) + 1
    moved_ids = set()
    # innermost first: a head's indent is its depth (sorted is stable: inner loops in their order)
    for head in sorted((ln for ln in lines if _is_for(ln)), key=lambda ln: -ln[0]):
        h = next(i for i, ln in enumerate(lines) if ln is head)
        depth = head[0]
        end = next(j for j in range(h + 1, len(lines))
                   if lines[j][0] == depth and lines[j][1] and lines[j][1].startswith("}"))
        body = lines[h + 1:end]
        varying = {head[1].split()[1]}
        varying |= {m.group(1) for ln in body if ln[1] for m in [_ASSIGNED.match(ln[1].strip())] if m}
        moved, kept = [], []
        for ln in body:
            text = ln[1].strip() if ln[1] and ln[0] == depth + 1 else ""
            m = _LET.match(text)
            if m and not m.group(1) and not _EFFECT.search(m.group(3)) \
                    and all(declared.get(n) == 1 for n in _WORD.findall(m.group(2))) \
                    and not varying & set(_WORD.findall(m.group(3))):
                ln[0] = depth
                moved.append(ln)
                moved_ids.add(id(ln))
                continue
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
    return len(moved_ids)
