"""SASS of a Tile IR program without a GPU: tileiras to a cubin, cuobjdump to text, and the
comparison of two instruction streams.

tileiras (``nvidia-cuda-tileiras``) runs on the CPU for any ``--gpu-name`` (sm_90, sm_100, ...);
``cuobjdump -sass`` (``nvidia-cuda-cuobjdump``) prints the cubin's instructions. Both come from
the pinned wheels (``tileport.core.toolchain.tool``). Each runtime calls tileiras its own way:
cuda-tile 1.7.0 ``cuda/tile/_compile.py`` ``compile_cubin``: ``--gpu-name <sm> -O<opt_level>
--lineinfo`` (opt_level 3 unless the kernel's ``opt_level`` hint says otherwise); cutile 0.5.0
``cutile-compiler/src/cuda_tile_runtime_utils.rs``: ``--gpu-name <sm> --opt-level 3``
(``DEFAULT_OPT_LEVEL``). :data:`FLAGS` holds both.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from tileport.core import toolchain
from tileport.core.verdict import atomic_write_text, link_or_copy

#: tileiras flags each side's launcher passes (see the module doc), by side, for an opt level
FLAGS = {"ref": lambda opt: [f"-O{opt}", "--lineinfo"], "port": lambda opt: ["--opt-level", str(opt)]}

#: the architectures compared: Hopper (the H200 of the published figures) and Blackwell (B200)
ARCHS = ("sm_90", "sm_100")


class SassError(RuntimeError):
    """tileiras or cuobjdump failed; the message carries the command and its stderr."""


def _env() -> dict:
    env = toolchain.cargo_env(toolchain.default_target_dir())   # CUDA_HOME unset, tools on PATH
    return env


def cubin(bytecode: str | Path, out: str | Path, arch: str, side: str, opt_level: int = 3) -> Path:
    """Compile Tile IR bytecode to a cubin for ``arch`` with ``side``'s launcher flags
    (:data:`FLAGS`). Raises :class:`SassError` (tileiras' stderr) or FileNotFoundError (no
    tileiras)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [toolchain.tool("tileiras"), "--gpu-name", arch, *FLAGS[side](opt_level), "-o", str(out), str(bytecode)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    if proc.returncode != 0:
        raise SassError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()[:1500]}")
    return out


def disassemble(cubin_path: str | Path) -> str:
    """``cuobjdump -sass`` of a cubin. Raises :class:`SassError`."""
    cmd = [toolchain.tool("cuobjdump"), "-sass", str(cubin_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    if proc.returncode != 0:
        raise SassError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()[:1500]}")
    return proc.stdout


#: per-SM limits of sm_90 (CUDA C++ Programming Guide, "Technical Specifications per Compute
#: Capability", 9.0): 32-bit registers, resident warps and CTAs, shared memory (bytes); registers
#: are allocated per warp in units of 256 (per thread: a multiple of 8)
SM90 = {"registers": 65536, "warps": 64, "ctas": 32, "shared": 228 * 1024, "reg_unit": 256}
#: sm_100 (the same table, compute capability 10.0): the same four limits as 9.0
SM100 = dict(SM90)
#: per-SM limits by the architectures :data:`ARCHS` compiles for
LIMITS = {"sm_90": SM90, "sm_100": SM100}


def resources(cubin_path: str | Path) -> dict:
    """Resource use of a one-kernel cubin from ``cuobjdump -res-usage`` and ``-elf``:
    ``{"registers": REG per thread, "shared": SHARED bytes, "local": LOCAL bytes (spills),
    "threads": threads per CTA from EIATTR_REQNTID, or None}``. Raises :class:`SassError`."""
    out = {}
    for flag in ("-res-usage", "-elf"):
        cmd = [toolchain.tool("cuobjdump"), flag, str(cubin_path)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_env())
        if proc.returncode != 0:
            raise SassError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()[:1500]}")
        out[flag] = proc.stdout
    use = dict((k, int(v)) for k, v in re.findall(r"\b(REG|SHARED|LOCAL):(\d+)", out["-res-usage"]))
    ntid = re.search(r"EIATTR_REQNTID\s+Format:[^\n]*\s+Value:\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)",
                     out["-elf"])
    return {"registers": use.get("REG"), "shared": use.get("SHARED"), "local": use.get("LOCAL"),
            "threads": int(ntid[1], 16) * int(ntid[2], 16) * int(ntid[3], 16) if ntid else None}


def ctas_per_sm(res: dict, limits: dict = SM90) -> int | None:
    """Resident CTAs per SM that registers, warps and shared memory allow for ``res``
    (:func:`resources`); None without a thread count. The occupancy calculator's arithmetic."""
    if not res.get("threads") or res.get("registers") is None:
        return None
    warps = -(-res["threads"] // 32)
    regs_warp = -(-res["registers"] * 32 // limits["reg_unit"]) * limits["reg_unit"]
    caps = [limits["ctas"], limits["warps"] // warps]
    if regs_warp:
        caps.append(limits["registers"] // (regs_warp * warps))
    if res.get("shared"):
        caps.append(limits["shared"] // res["shared"])
    return min(caps)


def tool_id(name: str) -> list:
    """What identifies a tool binary for a cache: its file name and the SHA-256 of its bytes
    (:func:`_file_sha`), never its path, so that every clone's virtualenv holding the same pinned
    wheel shares the caches. ``name``: a tool of :func:`tileport.core.toolchain.tool` or a path."""
    p = Path(name if os.sep in str(name) else toolchain.tool(name)).resolve()
    st = p.stat()
    return [p.name, _file_sha(str(p), st.st_size, st.st_mtime_ns)]


@functools.lru_cache(maxsize=None)
def _file_sha(path: str, size: int, mtime_ns: int) -> str:
    """SHA-256 of a file, once per process for a given (path, size, mtime): tileiras (about
    100 MB) takes about 0.3 s."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def occupancy_text(resources: dict | None) -> str:
    """One line naming what differs in two compilations' resource use (``{"ref": ..., "port":
    ...}`` of :func:`compiled`): resident CTAs per SM with the registers per
    thread behind them, or the registers or local (spill) bytes alone; "" when nothing differs
    or a side was not measured."""
    r, p = (resources or {}).get("ref") or {}, (resources or {}).get("port") or {}
    if not r or not p:
        return ""
    if r.get("ctas_per_sm") != p.get("ctas_per_sm"):
        return (f"occupancy: ref {r.get('ctas_per_sm')}, port {p.get('ctas_per_sm')} resident CTAs per SM "
                f"({r.get('registers')} / {p.get('registers')} registers per thread, {r.get('threads')} / "
                f"{p.get('threads')} threads per CTA)")
    parts = [f"{k} {r.get(k)} / {p.get(k)}" for k in ("registers", "local", "shared") if r.get(k) != p.get(k)]
    return ("resources ref / port: " + ", ".join(parts) + f" (both {r.get('ctas_per_sm')} CTAs per SM)"
            if parts else "")


def cache_key(bytecode: str | Path, arch: str, side: str, opt_level: int = 3, data: bytes | None = None) -> str:
    """The SASS cache key of ``bytecode`` (hex SHA-256 of its bytes, ``arch``, ``side``'s flags
    and both tools' identity, :func:`tool_id`). A reference bytecode names its kernel file by the
    path it was exported from: ``runtime_ir`` exports from the repository-relative path, so the
    same program in another clone has the same bytes and key. ``data``: the bytecode's bytes where
    the caller has read them already."""
    return hashlib.sha256((Path(bytecode).read_bytes() if data is None else data) + json.dumps(
        [arch, FLAGS[side](opt_level), tool_id("tileiras"), tool_id("cuobjdump")]).encode()).hexdigest()


def compiled(bytecode: str | Path, arch: str, side: str, opt_level: int = 3,
             cache_dir: str | Path | None = None, data: bytes | None = None) -> tuple[str, dict, bool]:
    """``bytecode`` compiled for ``arch`` with ``side``'s flags (:func:`cubin`): cuobjdump's SASS
    text (:func:`disassemble`), the kernel's resource use (:func:`resources`, plus
    ``ctas_per_sm`` for ``arch`` from :data:`LIMITS`, None for another arch) and whether both came
    from the cache.

    The cache (``cache_dir``, default ``tileport.core.toolchain.cache_root()/sass``; env
    ``TILEPORT_SASS_CACHE=off`` bypasses it) is keyed by :func:`cache_key`: the same program to
    the same binaries gives the same text, so a rerun, or a fresh clone on the same machine,
    recompiles nothing already compiled. An entry is the text and its resources (``.res.json``);
    one without the second is compiled again. Raises :class:`SassError` or FileNotFoundError as
    :func:`cubin` does; a failure is never cached. ``data``: as for :func:`cache_key`."""
    return _compiled_at(_cache_entry(bytecode, arch, side, opt_level, cache_dir, data), bytecode, arch, side,
                        opt_level)


def _cache_entry(bytecode, arch: str, side: str, opt_level: int, cache_dir, data: bytes | None) -> Path | None:
    """Where :func:`compiled` keeps ``bytecode``'s SASS text (None: the cache is off)."""
    if toolchain.cache_off("TILEPORT_SASS_CACHE"):
        return None
    key = cache_key(bytecode, arch, side, opt_level, data)
    return Path(cache_dir or toolchain.cache_root() / "sass") / key[:2] / f"{key}.sass"


def _compiled_at(entry: Path | None, bytecode, arch: str, side: str, opt_level: int) -> tuple[str, dict, bool]:
    """:func:`compiled` with its cache entry found (None: no cache)."""
    res_file = entry.with_suffix(".res.json") if entry is not None else None
    if entry is not None and entry.is_file() and res_file.is_file():
        return entry.read_text(), json.loads(res_file.read_text()), True
    with tempfile.TemporaryDirectory(prefix="tileport-sass-") as tmp:
        cub = cubin(bytecode, Path(tmp) / "k.cubin", arch, side, opt_level)
        text, res = disassemble(cub), resources(cub)
    res["ctas_per_sm"] = ctas_per_sm(res, LIMITS[arch]) if arch in LIMITS else None
    if entry is not None:
        entry.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(entry, text)
        atomic_write_text(res_file, json.dumps(res, sort_keys=True))
    return text, res, False


def compiled_instructions(bytecode: str | Path, arch: str, side: str, out: str | Path, opt_level: int = 3,
                          data: bytes | None = None) -> tuple[list[str], dict, bool]:
    """:func:`compiled`, with the SASS text placed at ``out`` (a hard link to the cache entry
    where the file system allows, else a copy) and its :func:`instructions` instead of the
    text: (instructions, resources, from the cache). The normalised stream is kept beside the
    cache entry (``.ins.json``), so a cache hit neither reads nor normalises the text (a large
    kernel's SASS is over 600 KB). Raises as :func:`compiled` does."""
    entry = _cache_entry(bytecode, arch, side, opt_level, None, data)
    ins_file, res_file = (entry.with_suffix(".ins.json"), entry.with_suffix(".res.json")) if entry else (None, None)
    if entry is not None and entry.is_file() and ins_file.is_file() and res_file.is_file():
        try:
            ins, res = json.loads(ins_file.read_text()), json.loads(res_file.read_text())
        except ValueError:          # a damaged entry: compiled again below
            ins = None
        if isinstance(ins, list):
            link_or_copy(entry, out)
            return ins, res, True
    text, res, hit = _compiled_at(entry, bytecode, arch, side, opt_level)
    ins = instructions(text)
    if entry is None:
        atomic_write_text(out, text)
    else:
        atomic_write_text(ins_file, json.dumps(ins))
        link_or_copy(entry, out)
    return ins, res, hit


def sass_text(bytecode: str | Path, arch: str, side: str, opt_level: int = 3,
              cache_dir: str | Path | None = None) -> tuple[str, bool]:
    """:func:`compiled` without the resources: (SASS text, from the cache)."""
    text, _, hit = compiled(bytecode, arch, side, opt_level, cache_dir)
    return text, hit


_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?P<ins>[^;]*?)\s*;", re.M)
_SYMBOL = re.compile(r"`\([^)\n]*\)")
# register numbers, one class at a time (a literal replacement: no per-match Python call)
_REGISTERS = [(re.compile(rf"\b{c}\d+\b"), c) for c in ("UR", "R", "UP", "P", "SB", "B")]
_BRANCH = re.compile(r"(@!?U?P\w*\s+)?(BRA|BRX|JMP|JMX|CALL|BSSY|SSY|PBK|PCNT|BREAK)\b")
_BRANCH_TARGET = re.compile(r"0x[0-9a-f]+\s*$")
_SPACES = re.compile(r"\s+")


def instructions(sass_text: str) -> list[str]:
    """The instruction stream of cuobjdump's text, normalised: no addresses, encodings or
    symbols; register numbers (``R12``, ``UR4``, ``P0``, ``UP1``, barriers ``B2``) and branch
    targets replaced by their class. Opcodes, modifiers, immediates and constant-bank offsets
    (the parameter layout, equal on both sides) stay."""
    # one instruction per line (a line break inside one is white space, as at the end), each
    # substitution over all of them at once, then per line
    raw = [m["ins"].replace("\n", " ") for m in _INSTR.finditer(sass_text)]
    text = _SYMBOL.sub("SYM", "\n".join(raw))                          # symbol references
    for pattern, cls in _REGISTERS:
        text = pattern.sub(cls, text)                                   # register numbers
    out = []
    for ins in text.split("\n") if raw else []:
        if _BRANCH.match(ins):
            ins = _BRANCH_TARGET.sub("ADDR", ins)                      # branch targets
        out.append(_SPACES.sub(" ", ins).strip())
    return out


def opcode(ins: str) -> str:
    """The mnemonic with its modifiers (``LDG.E.128``), without a guard predicate."""
    parts = ins.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


def compare(ref: list[str], port: list[str]) -> dict:
    """Verdict of two normalised instruction streams (:func:`instructions`): ``IDENTICAL`` (the
    same sequence), ``SAME_OPCODE_COUNTS`` (another order or other operands, the same multiset
    of opcodes) or ``DIFFERENT``; with both counts and ``delta`` = port count - ref count per
    opcode where they differ."""
    rc, pc = Counter(map(opcode, ref)), Counter(map(opcode, port))
    delta = {k: pc[k] - rc[k] for k in sorted(set(rc) | set(pc)) if pc[k] != rc[k]}
    verdict = "IDENTICAL" if ref == port else "SAME_OPCODE_COUNTS" if not delta else "DIFFERENT"
    return {"verdict": verdict, "ref_instructions": len(ref), "port_instructions": len(port), "delta": delta}


def delta_text(delta: dict, limit: int = 6) -> str:
    """``LDG.E.U16 -32, LDG.E.128 +4, ...``: loads and stores first, then the largest changes."""
    # memory instructions first (the launch facts decide their width), then by size
    items = sorted(delta.items(), key=lambda kv: (not re.match(r"(LD|ST|UTMA|UBLKCP)", kv[0]), -abs(kv[1]), kv[0]))
    s = ", ".join(f"{k} {v:+d}" for k, v in items[:limit])
    return s + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")
