"""Step 4: source locations in Tile IR text printed with ``tileirdisasm -g``.

Both frontends record where each op came from: cuTile Python the ``kernel.py`` line, cuTile
Rust the line of the generated ``.rs`` file. ``tileirdisasm --print-debug-info`` prints an op's
location as a trailing ``loc(#locN)`` and the aliases at the end of the text:

* ``#locN = loc("file":line:col)`` -- a file location;
* ``#locN = #cuda_tile.di_loc<#locM in #di_subprogram>`` -- a location inside a function;
* ``#locN = loc(callsite(#locA at #locB))`` -- ``#locA`` inlined into a call at ``#locB``
  (cuTile Rust's entry wrapper calls the kernel body, so the op's own line is ``#locA``);
* ``#locN = loc(unknown)``.

(Formats as printed by tileirdisasm 13.4 for cuda-tile 1.7.0 and cutile 0.5.0 bytecode.)
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .graph_diff import DiffResult

_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*(.*)$")
_FILE = re.compile(r'^loc\("([^"]*)":(\d+):(\d+)\)$')
_DI = re.compile(r"^#cuda_tile\.di_loc<(#loc\d*) in #\w+>$")
_CALL = re.compile(r"^loc\(callsite\((#loc\d*) at (#loc\d*)\)\)$")
_TRAILING = re.compile(r"\sloc\((#loc\d*)\)\s*\{?\s*$")


def resolve_aliases(text: str) -> dict[str, tuple[str, int] | None]:
    """Map every ``#locN`` alias of ``text`` to ``(file, line)`` (None for unknown)."""
    raw = {}
    for line in text.splitlines():
        m = _ALIAS.match(line.strip())
        if m:
            raw[m.group(1)] = m.group(2).strip()
    out: dict[str, tuple[str, int] | None] = {}

    def res(name: str, depth: int = 0):
        if name in out:
            return out[name]
        val = raw.get(name)
        r = None
        if val is not None and depth < 32:
            if m := _FILE.match(val):
                r = (m.group(1), int(m.group(2)))
            elif m := _DI.match(val):
                r = res(m.group(1), depth + 1)
            elif m := _CALL.match(val):
                r = res(m.group(1), depth + 1) or res(m.group(2), depth + 1)
        out[name] = r
        return r

    for name in raw:
        res(name)
    return out


def op_sources(text: str) -> dict[int, tuple[str, int]]:
    """1-based IR line number -> ``(source file, source line)`` for every op line that carries
    a resolvable ``loc(#locN)``. An op with regions (``reduce``, ``for``, ``if``) prints its
    location after the region's closing brace; it is attributed to the op's first line."""
    aliases = resolve_aliases(text)
    out: dict[int, tuple[str, int]] = {}
    stack: list[int] = []          # first line of each op whose region is open
    last_op = 0
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = _TRAILING.search(line)
        where = aliases.get(m.group(1)) if m else None
        if s.startswith("}"):
            owner = stack.pop() if stack else None
            if s.endswith("{") and owner is not None:       # `} else {`: same op goes on
                stack.append(owner)
            elif owner is not None and where and owner not in out:
                out[owner] = where
            continue
        if where:
            out[i] = where
        if s.startswith("(") and s.endswith("{"):             # block args of the last op's region
            stack.append(last_op)
        elif s.endswith("{"):
            stack.append(i)
        if s and not s.startswith(("(", "#")):
            last_op = i
    return out


def attach_sources(res: DiffResult, ref_text: str, port_text: str) -> None:
    """Add ``source`` (``file:line`` of kernel.py / the generated .rs) to the IR locations of
    the findings, from the debug info of ``tileirdisasm -g`` text (:func:`op_sources`)."""
    srcs = {"ref": op_sources(ref_text), "port": op_sources(port_text)}
    found = list(res.findings) + ([res.first_divergence] if res.first_divergence else [])
    for f in found:
        for side in ("ref", "port"):
            where = getattr(f, side)
            if where and where.get("line") in srcs[side] and "source" not in where:
                file, line = srcs[side][where["line"]]
                where["source"] = f"{file}:{line}"
