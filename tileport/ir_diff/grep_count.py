"""A grep-count IR check in the style of NVIDIA's ``diff_ir.sh`` (their cuTile Python -> Rust
conversion skill): per side, counts of memory, reduction and mma ops and a few attributes, found
by regular expressions in the printed Tile IR; the check fails when a count differs.

Written here from that description only (issue 36; no code of theirs): the study of
:mod:`tileport.cpu.mutation` runs it beside tileport's structural diff to measure what such a
check sees. It compares counts, never dataflow: an operand swap, a constant, a mask's predicate
or a loop bound leave every count as it was.
"""
from __future__ import annotations

import re
from collections import Counter

#: the op families counted (``%x = <op> ...`` or ``<op> ...`` at the start of a statement)
OPS = {
    "memory": ("load_view_tko", "store_view_tko", "load_ptr_tko", "store_ptr_tko", "atomic_rmw_tko",
               "atomic_red_view_tko"),
    "reduction": ("reduce", "scan"),
    "mma": ("mmaf", "mmai"),
}

#: the attributes counted, by value: a view's padding, a reduction's dim and identities
ATTRS = {
    "padding_value": re.compile(r"padding_value = (\w+)"),
    "dim": re.compile(r"\b(?:reduce|scan)\b[^\n]*?\bdim=(\d+)"),
    "identities": re.compile(r"identities=\[([^\]]*)\]"),
}

_STMT = re.compile(r"^\s*(?:%[\w#, %]+=\s*)?([a-z_]+)\b", re.M)


def counts(text: str) -> Counter:
    """``{"op:load_view_tko": 2, "attr:padding_value=zero": 1, ...}`` of one Tile IR text."""
    wanted = {o for ops in OPS.values() for o in ops}
    c = Counter(f"op:{m[1]}" for m in _STMT.finditer(text) if m[1] in wanted)
    for name, rx in ATTRS.items():
        c.update(f"attr:{name}={m[1].strip()}" for m in rx.finditer(text))
    return c


def compare(ref_text: str, port_text: str) -> dict:
    """``{"verdict": PASS | FAIL, "differ": {key: [ref, port]}, "ref": {...}, "port": {...}}``."""
    r, p = counts(ref_text), counts(port_text)
    differ = {k: [r[k], p[k]] for k in sorted(set(r) | set(p)) if r[k] != p[k]}
    return {"verdict": "FAIL" if differ else "PASS", "differ": differ, "ref": dict(r), "port": dict(p)}
