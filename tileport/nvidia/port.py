"""Stage ``nv_port``: NVIDIA's own cuTile Rust ports, shipped in the tilegym wheel, as the yardstick.

The installed ``tilegym`` wheel (``tilegym==1.5.1``, installed ``--no-deps``) ships, under
``tilegym/ops/cutile_rs/``, NVIDIA's cuTile Rust ports of five operators: ``<op>_kernel/kernel.rs``
(a ``#[cutile::module]`` with the ``#[cutile::entry()]`` kernels), ``<op>_kernel/ffi.rs`` (one C
function ``cutile_<op>``), the shared ``ffi_util.rs`` and one cdylib crate ``cutile_kernels/``
whose ``Cargo.toml`` pins ``cutile =0.2.0``. ``rust/nvidia/ports.yaml`` says which TileGym cuTile
Python kernel each entry ports and how a reference launch maps onto the entry's generics and the C
function's arguments. Three rules (``rules/nv_port.smk``):

* ``nv_build`` (per pin set, ``shipped`` or ``tileport``): copies the crate's files out of the
  installed wheel (checked against the wheel's RECORD hashes) into ``results/nvidia/<pins>/crate/``,
  a cargo workspace of NVIDIA's cdylib as shipped and ``nv-irdump`` (tileport's ``rust/irdump.rs``
  over the five ``kernel.rs`` modules, compiled with the same dependency pins), locked by the
  committed ``rust/nvidia/Cargo.lock`` (``shipped``: the wheel's own pins) or
  ``rust/nvidia/Cargo.tileport.lock`` (``tileport``: the cutile crates re-pinned to tileport's pin,
  ``rust/port-template/Cargo.toml``), and builds both with ``cargo build --release --locked`` in its
  own target directory (``<shared cargo target>/nvidia-<pins>``, never mixed with tileport's own
  builds) from a copy of the workspace at ``<that target>/crate`` (one path for every checkout, so
  a new clone finds its build done: cargo's fingerprints name the package's path). Verdict PASS,
  FAIL (rustc errors in NVIDIA's sources: each a finding with file, line and
  the source line: what differs for that pin) or ERROR (environment, lock).
* ``nv_ir`` (per operator x kernel x variant of an operator that imports a TileGym kernel NVIDIA
  ported, its manifest's ``source:``): runs ``nv-irdump`` -- cutile's ``KernelCompiler`` on the
  module AST, no GPU -- for the entry's generics from the variant (dtype x constexprs), strides
  innermost 1 and the others dynamic (what the runtime specialises a contiguous tensor to, and what
  the reference signature declares), and prints it with ``tileirdisasm`` as for every other IR.
* ``nv_ir_diff``: tileport's IR diff (:func:`tileport.ir_diff.run`) of that IR against the
  reference's (``results/<op>/ref/<kernel>/<variant>.tileir``): does NVIDIA's port pass the
  verifier tileport's own ports must pass? Owners as the IR diff gives them; ``kernel`` is
  NVIDIA's kernel.rs, ``host`` its launch ABI.

On a GPU the functional test and the benchmark call the C function as a fourth side
(:mod:`tileport.nvidia.ffi`), bound from the same reference launch.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tileport.core import toolchain
from tileport.core.source import source_lines
from tileport.core.verdict import Finding, Verdict, VerdictError, atomic_write_text, loc, read, write
from tileport.core.wheels import record_digest, site_path
from tileport.model import manifest as tp_manifest
from tileport.model.manifest import _yaml_line

REPO = Path(__file__).resolve().parents[2]
NV_DIR = REPO / "rust" / "nvidia"
PORTS = NV_DIR / "ports.yaml"
SCHEMA = REPO / "schemas" / "nv_ports.schema.yaml"
#: pin set -> the committed lock file of its workspace
LOCKS = {"shipped": NV_DIR / "Cargo.lock", "tileport": NV_DIR / "Cargo.tileport.lock"}
PIN_SETS = tuple(LOCKS)
#: the crates of the cutile-rs workspace (NVlabs/cutile-rs, published together): re-pinned together
CUTILE_CRATES = ("cutile", "cutile-macro", "cutile-compiler", "cutile-ir", "cuda-async", "cuda-core",
                 "cuda-bindings")
WHEEL_DIR = "tilegym/ops/cutile_rs/"
IRDUMP_PKG, IRDUMP_BIN = "tileport-nv-irdump", "nv-irdump"

#: yaml.safe_load's loader, with libyaml's parser where PyYAML has it (every Snakefile start
#: reads each manifest here: the pure-Python parser took most of a second for 48 of them)
_SAFE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class NvPortError(RuntimeError):
    """NVIDIA's crate cannot be read, copied or mapped; the message names the file and the cause."""


# --------------------------------------------------------------------------------------------
# ports.yaml
# --------------------------------------------------------------------------------------------

class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses a duplicate mapping key (never silently keeps the last one)."""


def _no_duplicates(loader, node, deep=False):
    seen = {}
    for k, _ in node.value:
        key = loader.construct_object(k, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}' (first on line {seen[key]})", k.start_mark)
        seen[key] = k.start_mark.line + 1
    return loader.construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def load_ports(path: str | Path = PORTS) -> dict:
    """``rust/nvidia/ports.yaml``, validated by ``schemas/nv_ports.schema.yaml``.

    Returns ``{op: {"symbol", "entries": {entry: {"reference", "generics", "call", ...}}}}``.

    Raises:
        NvPortError: unreadable file, YAML error or duplicate key (with line), a schema violation
            (key path and line), or one reference kernel claimed by two entries.
    """
    import jsonschema


    path = Path(path)
    try:
        text = path.read_text()
        doc = yaml.load(text, Loader=_UniqueKeyLoader)
    except OSError as exc:
        raise NvPortError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise NvPortError(f"{path}:{mark.line + 1 if mark else 1}: YAML error: "
                          f"{getattr(exc, 'problem', exc)}") from None
    schema = yaml.safe_load(SCHEMA.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc),
                    key=lambda e: -len(e.absolute_path))
    if errors:
        e = errors[0]
        keypath = list(e.absolute_path)
        raise NvPortError(f"{path}:{_yaml_line(text, keypath) or 1}: key "
                          f"'{'/'.join(map(str, keypath)) or '<root>'}': {e.message}")
    seen = {}
    for op, spec in doc.items():
        for entry, e in spec["entries"].items():
            if e["reference"] in seen:
                raise NvPortError(f"{path}:{_yaml_line(text, [op, 'entries', entry]) or 1}: "
                                  f"{e['reference']} is ported by {seen[e['reference']]} already")
            seen[e["reference"]] = f"{op}/{entry}"
    return doc


def by_reference(ports: dict) -> dict[str, tuple[str, str]]:
    """``{"<module>.<function>": (nv op, entry)}`` of every entry in ``ports``."""
    return {e["reference"]: (op, name) for op, spec in ports.items()
            for name, e in spec["entries"].items()}


def manifest_source(manifest_path: str | Path) -> tuple[str, list[str]] | None:
    """``(module, [kernel functions])`` of an operator manifest's ``source:`` (the TileGym module it
    imports its kernels from), or None when it has none or cannot be read (the manifest's own
    stages report that). ``kernels`` may be a list of names, a list of ``{name: ...}`` mappings or
    a mapping; absent, the manifest's ``kernels`` keys are the functions."""
    try:
        doc = yaml.load(Path(manifest_path).read_text(), Loader=_SAFE)  # libyaml: see _SAFE
    except (OSError, yaml.YAMLError):
        return None
    src = doc.get("source") if isinstance(doc, dict) else None
    if not isinstance(src, dict) or not isinstance(src.get("module"), str):
        return None
    ks = src.get("kernels", doc.get("kernels"))
    if isinstance(ks, dict):
        names = list(ks)
    elif isinstance(ks, list):
        names = [k if isinstance(k, str) else (k.get("name") or k.get("function"))
                 for k in ks if isinstance(k, (str, dict))]
    else:
        names = []
    return src["module"], [n for n in names if isinstance(n, str)]


def links(manifest_path: str | Path, ports: dict) -> dict[str, tuple[str, str]]:
    """``{kernel: (nv op, entry)}``: the kernels of one operator that NVIDIA ported (its
    manifest's ``source:`` names a TileGym module, and ``ports`` an entry for that function)."""
    src = manifest_source(manifest_path)
    if src is None:
        return {}
    index = by_reference(ports)
    return {k: index[f"{src[0]}.{k}"] for k in src[1] if f"{src[0]}.{k}" in index}


# --------------------------------------------------------------------------------------------
# the installed wheel
# --------------------------------------------------------------------------------------------

@dataclass
class Wheel:
    """NVIDIA's crate in the installed tilegym distribution.

    ``root``: ``<site-packages>/tilegym/ops/cutile_rs``; ``files``: its ``.rs`` / ``.toml`` files
    (paths relative to ``root``), with their RECORD sha256 (urlsafe base64, as RECORD writes it).
    """

    version: str
    root: Path
    files: dict[str, str] = field(default_factory=dict)


def installed_wheel(dist: str = "tilegym") -> Wheel:
    """The crate files of the installed ``tilegym`` distribution (read, never imported: its
    modules import torch).

    Raises:
        NvPortError: tilegym is not installed, lists no RECORD, or ships no ``cutile_rs`` crate.
    """
    try:
        d = md.distribution(dist)
    except md.PackageNotFoundError:
        raise NvPortError(f"{dist} is not installed in this environment ({sys.executable}): "
                          f"`make install` installs the pinned tilegym wheel (--no-deps)") from None
    files = {}
    for f in d.files or []:
        s = str(f)
        if s.startswith(WHEEL_DIR) and f.suffix in (".rs", ".toml") and "/target/" not in s:
            files[s[len(WHEEL_DIR):]] = f.hash.value if f.hash and f.hash.mode == "sha256" else ""
    if not files or "cutile_kernels/Cargo.toml" not in files:
        raise NvPortError(f"{dist} {d.version}: no {WHEEL_DIR}cutile_kernels/Cargo.toml in its RECORD")
    return Wheel(d.version, site_path(d, WHEEL_DIR.rstrip("/")), dict(sorted(files.items())))


def crate_inputs() -> list[str]:
    """Absolute paths of the installed crate's files (Snakemake inputs of ``nv_build``: a new
    wheel reruns it); [] when tilegym is not installed (``nv_build`` then says so)."""
    try:
        w = installed_wheel()
    except NvPortError:
        return []
    return [str(w.root / rel) for rel in w.files]


def read_crate(wheel: Wheel) -> dict[str, str]:
    """``{relative path: text}`` of the crate's files, each checked against the wheel's RECORD.

    Raises:
        NvPortError: a file is missing or differs from RECORD (an edited install: reinstall).
    """
    out = {}
    for rel, want in wheel.files.items():
        p = wheel.root / rel
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise NvPortError(f"{p}: cannot read: {exc.strerror}") from None
        if want and record_digest(data) != want:
            raise NvPortError(f"{p}: differs from tilegym {wheel.version}'s RECORD (an edited "
                              f"install: `pip install --force-reinstall --no-deps` the pinned wheel)")
        out[rel] = data.decode()
    return out


# --------------------------------------------------------------------------------------------
# reading NVIDIA's Rust sources (signatures only)
# --------------------------------------------------------------------------------------------

def _strip_comments(text: str) -> str:
    """Rust text with ``//`` comments blanked (same length, so offsets and lines stay)."""
    return re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)


def _balanced(text: str, i: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at ``text[i]`` (``open_``)."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    raise NvPortError(f"unbalanced '{open_}' at offset {i}")


def _split_top(s: str) -> list[str]:
    """Split at commas outside (), [], {}, <> (a trailing comma gives no empty item)."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return [x for x in out if x]


def lib_modules(lib_rs: str) -> dict[str, dict[str, str]]:
    """The ops ``cutile_kernels/src/lib.rs`` aggregates: ``{op: {"kernel": rel, "ffi": rel}}`` from
    its ``mod <op> { include!("../../<op>_kernel/kernel.rs"); include!(".../ffi.rs"); }`` blocks
    (paths relative to the crate root, the ``cutile_rs/`` folder)."""
    out = {}
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{([^}]*)\}", _strip_comments(lib_rs)):
        inc = re.findall(r'include!\(\s*"([^"]+)"\s*\)', m.group(2))
        paths = {Path(p).name.removesuffix(".rs"): os.path.normpath(os.path.join("cutile_kernels/src", p))
                 for p in inc}
        if "kernel" in paths:
            out[m.group(1)] = paths
    return out


def module_name(kernel_rs: str) -> str:
    """Name of the ``#[cutile::module] pub mod <name>`` a kernel.rs defines."""
    m = re.search(r"#\[cutile::module[^\]]*\]\s*pub\s+mod\s+(\w+)", _strip_comments(kernel_rs))
    if not m:
        raise NvPortError("no #[cutile::module] pub mod in kernel.rs")
    return m.group(1)


def parse_entries(kernel_rs: str) -> dict[str, dict]:
    """The ``#[cutile::entry(...)]`` functions of a kernel.rs: ``{name: {"line", "generics":
    [[name, "type" | "const"]], "params": [[name, Rust type]]}}``, in source order."""
    text = _strip_comments(kernel_rs)
    out = {}
    for m in re.finditer(r"#\[cutile::entry", text):
        attr_end = _balanced(text, text.index("[", m.start()), "[", "]")
        f = re.compile(r"\s*pub\s+unsafe\s+fn\s+(\w+)\s*").match(text, attr_end)
        if not f:
            f = re.compile(r"\s*pub\s+fn\s+(\w+)\s*").match(text, attr_end)
        if not f:
            continue
        i, generics = f.end(), []
        if text[i] == "<":
            j = _balanced(text, i, "<", ">")
            for g in _split_top(text[i + 1:j - 1]):
                c = re.match(r"const\s+(\w+)\s*:", g)
                generics.append([c.group(1), "const"] if c else [g.split(":")[0].strip(), "type"])
            i = j
        i = text.index("(", i)
        j = _balanced(text, i, "(", ")")
        params = []
        for p in _split_top(text[i + 1:j - 1]):
            name, _, ty = p.partition(":")
            params.append([name.strip(), " ".join(ty.split())])
        out[f.group(1)] = {"line": text.count("\n", 0, m.start()) + 1, "generics": generics,
                           "params": params}
    return out


def parse_ffi(ffi_rs: str) -> dict[str, dict]:
    """The ``extern "C"`` functions of an ffi.rs: ``{symbol: {"line", "params": [[name, Rust
    type]], "returns": type}}``."""
    text = _strip_comments(ffi_rs)
    out = {}
    for m in re.finditer(r'extern\s+"C"\s+fn\s+(\w+)\s*\(', text):
        i = m.end() - 1
        j = _balanced(text, i, "(", ")")
        ret = re.match(r"\s*->\s*([\w:]+)", text[j:])
        params = []
        for p in _split_top(text[i + 1:j - 1]):
            name, _, ty = p.partition(":")
            params.append([name.strip(), " ".join(ty.split())])
        out[m.group(1)] = {"line": text.count("\n", 0, m.start()) + 1, "params": params,
                           "returns": ret.group(1) if ret else "()"}
    return out


def tensor_rank(rust_type: str) -> int | None:
    """Rank of a ``&Tensor<E, { [-1, -1] }>`` parameter type (None for other types)."""
    m = re.match(r"&\s*(?:mut\s+)?Tensor\s*<\s*\w+\s*,\s*\{\s*\[([^\]]*)\]\s*\}\s*>", rust_type)
    if not m:
        return None
    return len([d for d in m.group(1).split(",") if d.strip()])


# --------------------------------------------------------------------------------------------
# the workspace: NVIDIA's crate as shipped + the IR dumper
# --------------------------------------------------------------------------------------------

def tileport_pin() -> str:
    """The cutile version tileport's own ports are built with (``rust/port-template/Cargo.toml``)."""
    doc = tomllib.loads((REPO / "rust" / "port-template" / "Cargo.toml").read_text())
    return str(doc["dependencies"]["cutile"]).lstrip("=")


def dependency_pins(cargo_toml: str) -> dict[str, str]:
    """``{crate: version requirement}`` of a Cargo.toml's ``[dependencies]``."""
    deps = tomllib.loads(cargo_toml).get("dependencies", {})
    return {k: (v if isinstance(v, str) else v.get("version", "")) for k, v in deps.items()}


def repin(cargo_toml: str, version: str) -> str:
    """The Cargo.toml with every cutile-rs crate of ``[dependencies]`` required at ``=version``.

    Raises:
        NvPortError: a cutile-rs dependency's requirement could not be rewritten.
    """
    out = cargo_toml
    for name, req in dependency_pins(cargo_toml).items():
        if name not in CUTILE_CRATES:
            continue
        pat = re.compile(rf'^(\s*{re.escape(name)}\s*=\s*(?:\{{[^}}\n]*\bversion\s*=\s*)?)"{re.escape(req)}"', re.M)
        out, n = pat.subn(rf'\g<1>"={version}"', out)
        if n != 1:
            raise NvPortError(f"cutile_kernels/Cargo.toml: cannot re-pin dependency {name} = {req!r}")
    return out


def lock_versions(lock_text: str) -> dict[str, list[str]]:
    """``{package: [versions]}`` of a Cargo.lock."""
    out: dict[str, list[str]] = {}
    for p in tomllib.loads(lock_text).get("package", []):
        out.setdefault(p["name"], []).append(p["version"])
    return out


def irdump_main(modules: dict[str, dict], sources_sha: str) -> str:
    """``nv-irdump``'s main.rs: each op's kernel.rs in a module of its own (as NVIDIA's lib.rs
    does), the module table for :func:`irdump::main_with_modules` and the sources' hash."""
    lines = ["// Generated by tileport: Tile IR dumper over NVIDIA's shipped kernel.rs modules.",
             "#![allow(dead_code, unused_imports, unused_variables, unused_mut, unused_unsafe)]",
             "mod irdump;", ""]
    for op, m in modules.items():
        lines.append(f'mod {op} {{ include!("../../{m["kernel"]}"); }}')
    lines += ["", "static MODULES: &[irdump::NamedModule] = &["]
    lines += [f'    ("{op}", "{m["module"]}", {op}::{m["module"]}::__module_ast_self),'
              for op, m in modules.items()]
    lines += ["];", "", "/// sha256 of the kernel.rs sources this binary was built from",
              f'const SOURCES_SHA: &str = "{sources_sha}";', "",
              "fn main() {", "    irdump::main_with_modules(MODULES, SOURCES_SHA);", "}", ""]
    return "\n".join(lines)


def kernels_sha(files: dict[str, str], modules: dict[str, dict]) -> str:
    """sha256 over the kernel.rs sources (op order): what ``nv-irdump --sources-sha`` reports."""
    h = hashlib.sha256()
    for op, m in modules.items():
        h.update(op.encode() + b"\0" + files[m["kernel"]].encode() + b"\0")
    return h.hexdigest()


def workspace_files(files: dict[str, str], pins: str, with_lock: bool = True) -> tuple[dict[str, str], dict]:
    """Every file of the cargo workspace for one pin set, from the crate's files as shipped.

    Returns ``(files, info)``: files by relative path (NVIDIA's, verbatim except the re-pinned
    ``cutile_kernels/Cargo.toml`` for ``tileport``; the workspace ``Cargo.toml``, the committed
    ``Cargo.lock`` unless ``with_lock`` is false, the ``nv-irdump`` crate), and ``info`` =
    ``{"package", "library", "pins", "modules": {op: {"kernel", "ffi", "module", "entries", "symbols"}},
    "sources_sha"}``.

    Raises:
        NvPortError: the crate lacks lib.rs or a file it includes, or a pin cannot be rewritten.
    """
    if pins not in LOCKS:
        raise NvPortError(f"unknown pin set '{pins}' (one of {list(LOCKS)})")
    toml = files["cutile_kernels/Cargo.toml"]
    if pins == "tileport":
        toml = repin(toml, tileport_pin())
    meta = tomllib.loads(toml)
    package = meta["package"]["name"]
    library = meta.get("lib", {}).get("name", package.replace("-", "_"))
    lib_rs = files.get("cutile_kernels/src/lib.rs")
    if lib_rs is None:
        raise NvPortError("cutile_kernels/src/lib.rs is not in the wheel")
    modules = {}
    for op, inc in lib_modules(lib_rs).items():
        for what in ("kernel", "ffi"):
            if inc.get(what) and inc[what] not in files:
                raise NvPortError(f"cutile_kernels/src/lib.rs includes {inc[what]}, which the wheel lacks")
        k = files[inc["kernel"]]
        modules[op] = {"kernel": inc["kernel"], "ffi": inc.get("ffi", ""), "module": module_name(k),
                       "entries": parse_entries(k),
                       "symbols": parse_ffi(files[inc["ffi"]]) if inc.get("ffi") else {}}
    sha = kernels_sha(files, modules)
    deps = toml[toml.index("[dependencies]"):] if "[dependencies]" in toml else "[dependencies]\n"
    out = {rel: text for rel, text in files.items()}
    out["cutile_kernels/Cargo.toml"] = toml
    out["Cargo.toml"] = ("# Generated by tileport: NVIDIA's crate as shipped + tileport's Tile IR dumper\n"
                         "[workspace]\n" f'members = ["cutile_kernels", "{IRDUMP_BIN}"]\n'
                         'resolver = "3"\n')
    if with_lock:
        out["Cargo.lock"] = LOCKS[pins].read_text()
    out[f"{IRDUMP_BIN}/Cargo.toml"] = (
        "# Generated by tileport: the kernels of NVIDIA's crate with its own dependency pins\n"
        f'[package]\nname = "{IRDUMP_PKG}"\nversion = "0.1.0"\n'
        f'edition = "{meta["package"].get("edition", "2024")}"\npublish = false\n\n'
        f'[[bin]]\nname = "{IRDUMP_BIN}"\npath = "src/main.rs"\n\n' + deps)
    out[f"{IRDUMP_BIN}/src/irdump.rs"] = (REPO / "rust" / "irdump.rs").read_text()
    out[f"{IRDUMP_BIN}/src/main.rs"] = irdump_main(modules, sha)
    info = {"package": package, "library": library, "pins": dependency_pins(toml),
            "modules": modules, "sources_sha": sha}
    return out, info


def write_workspace(files: dict[str, str], dst: str | Path) -> None:
    """Write the workspace; a file is rewritten only when its content changes (cargo's
    fingerprints stay valid); files no longer in the set are removed (``target/`` excepted)."""
    dst = Path(dst)
    for rel, text in files.items():
        p = dst / rel
        if not p.is_file() or p.read_text() != text:
            atomic_write_text(p, text)
    if dst.is_dir():
        for p in dst.rglob("*"):
            rel = p.relative_to(dst).as_posix()
            if p.is_file() and rel not in files and not rel.startswith("target/"):
                p.unlink()


# --------------------------------------------------------------------------------------------
# nv_build
# --------------------------------------------------------------------------------------------

def target_dir(pins: str) -> Path:
    """The cargo target directory of one pin set: ``nvidia-<pins>`` under the shared one."""

    return toolchain.default_target_dir() / f"nvidia-{pins}"


# rustc --message-format=short: <file.rs>:<line>:<col>: error[...]: message
_RUSTC_ERR = re.compile(r"^(?P<file>[^\s:]+\.rs):(?P<line>\d+):(?P<col>\d+): (?P<msg>error.*)$", re.M)


def rustc_findings(stderr: str, crate: Path, pins: str, shown: Path | None = None) -> list[Finding]:
    """One finding per rustc error in NVIDIA's sources (owner ``kernel`` for a kernel.rs, ``host``
    for the FFI files), with the source line's text. ``shown``: the copy of ``crate`` a finding
    names (the same files; cargo built ``crate``)."""
    out = []
    for m in _RUSTC_ERR.finditer(stderr):
        f = Path(m["file"]) if os.path.isabs(m["file"]) else crate / m["file"]
        f = Path(os.path.normpath(f))
        if shown is not None and f.is_relative_to(crate):
            f = shown / f.relative_to(crate)
        line = int(m["line"])
        try:
            text = source_lines(f.read_text())[line - 1].strip()   # rustc does not split at form feeds
        except (OSError, IndexError):
            text = ""
        owner = "kernel" if f.name == "kernel.rs" else "host"
        out.append(Finding("build", "critical", owner, f"{pins} pins: {f.name}:{line}: {m['msg']}",
                           port=loc(str(f), line, text)))
    return out


def _cargo(args: list[str], manifest: Path, env: dict) -> tuple[subprocess.CompletedProcess, float]:
    cmd = ["cargo", "build", "--release", "--locked", "--quiet", "--message-format=short",
           "--manifest-path", str(manifest)] + args
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    secs = round(time.monotonic() - t0, 1)
    print(f"$ {' '.join(cmd)}\n# {secs} s, exit {proc.returncode}\n{proc.stdout}{proc.stderr}", flush=True)
    return proc, secs


def build(pins: str, out_dir: str | Path, out_json: str | Path, tdir: str | Path | None = None,
          wheel: Wheel | None = None, attempt: int = 1) -> dict:
    """Build NVIDIA's crate and ``nv-irdump`` for one pin set (see the module doc); never raises
    on a failing build. Writes the verdict (stage ``nv_build``) with ``details``: ``wheel``,
    ``pins`` (the cutile-rs crates' requirements), ``lock`` (cutile's locked version), ``cdylib``
    and ``irdump`` (``ok``, ``seconds``, the copied ``library`` / ``binary``), ``modules`` (per op:
    module, entries with generics and parameters, C symbols with their parameters), ``symbols``
    (what the library exports), ``sources_sha``."""
    out_dir = Path(out_dir)
    base = dict(stage="nv_build", op="nvidia", variant=pins, attempt=attempt)
    crate = out_dir / "crate"
    try:
        wheel = wheel or installed_wheel()
        files, info = workspace_files(read_crate(wheel), pins)
    except NvPortError as exc:
        return write(Verdict(**base, verdict="ERROR", owner="env", summary=str(exc)[:1500],
                             findings=[Finding("environment", "critical", "env", str(exc))]), out_json)
    write_workspace(files, crate)

    tdir = Path(tdir) if tdir else target_dir(pins)
    try:
        env = toolchain.cargo_env(tdir)
    except FileNotFoundError as exc:
        return write(Verdict(**base, verdict="ERROR", owner="env", summary=str(exc),
                             findings=[Finding("environment", "critical", "env", str(exc))]), out_json)
    details = {"wheel": {"version": wheel.version, "root": str(wheel.root)}, "pins": info["pins"],
               "lock": {"file": str(LOCKS[pins].relative_to(REPO)),
                        "cutile": lock_versions(files["Cargo.lock"]).get("cutile", [])},
               "modules": info["modules"], "sources_sha": info["sources_sha"],
               "crate": str(crate), "target_dir": str(tdir)}
    findings, env_errors = [], []
    tdir.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(tdir / ".tileport-build.lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        # cargo builds a copy at one path per pin set, the same in every checkout, so a clone
        # whose wheel holds the same crate finds it built (cargo keys its fingerprints by the
        # package's path: the copy under results/ would be compiled again in each new clone)
        built_crate = tdir / "crate"
        write_workspace(files, built_crate)
        details["built_crate"] = str(built_crate)
        for step, pkg in (("cdylib", info["package"]), ("irdump", IRDUMP_PKG)):
            proc, secs = _cargo(["-p", pkg], built_crate / "Cargo.toml", env)
            found = rustc_findings(proc.stderr, built_crate, pins, shown=crate)
            details[step] = {"ok": proc.returncode == 0, "seconds": secs, "errors": len(found)}
            findings += found
            if proc.returncode != 0 and not found:
                tail = " | ".join(proc.stderr.strip().splitlines()[-4:]) or f"exit {proc.returncode}"
                if "--locked" in proc.stderr and "lock file" in proc.stderr:
                    tail = (f"{LOCKS[pins].relative_to(REPO)} does not match the crate's pins "
                            f"{info['pins']}: regenerate it (`python -m tileport.nvidia.port lock`): {tail}")
                env_errors.append(f"{step}: cargo build failed: {tail}")
                continue
            if proc.returncode == 0:
                rel = (f"lib{info['library']}.so" if step == "cdylib" else IRDUMP_BIN)
                src, dst = tdir / "release" / rel, out_dir / rel
                tmp = dst.with_name(f".{dst.name}.tmp")
                shutil.copy2(src, tmp)
                tmp.replace(dst)
                details[step]["library" if step == "cdylib" else "binary"] = str(dst)
    if details["irdump"]["ok"]:
        binary = details["irdump"]["binary"]
        got = subprocess.run([binary, "--sources-sha"], capture_output=True, text=True).stdout.strip()
        if got != info["sources_sha"]:
            env_errors.append(f"{binary} reports kernel sources {got or '?'}, the crate holds "
                              f"{info['sources_sha']}: a stale build in {tdir}")
            details["irdump"]["ok"] = False
    if details["cdylib"]["ok"]:
        syms = toolchain.exported_symbols(details["cdylib"]["library"])
        details["symbols"] = [s for s in syms if s.startswith("cutile_")] if syms is not None else None
        wanted = sorted(s for m in info["modules"].values() for s in m["symbols"])
        if syms is not None and not set(wanted) <= set(syms):
            env_errors.append(f"the library does not export {sorted(set(wanted) - set(syms))}")
    cutile = ",".join(details["lock"]["cutile"]) or "?"
    secs = sum(details[s]["seconds"] for s in ("cdylib", "irdump"))
    if env_errors:
        msg = "; ".join(env_errors)
        return write(Verdict(**base, verdict="ERROR", owner="env", summary=f"cutile {cutile}: {msg}"[:1500],
                             findings=findings + [Finding("environment", "critical", "env", msg[:3000])],
                             details=details), out_json)
    if findings:
        files_hit = sorted({Path(f.port["file"]).name for f in findings})
        parts = [f"{s} {'builds' if details[s]['ok'] else 'does not build'}" for s in ("cdylib", "irdump")]
        return write(Verdict(**base, verdict="FAIL", owner=findings[0].owner,
                             summary=(f"cutile {cutile} ({pins} pins): {', '.join(parts)}: "
                                      f"{len(findings)} rustc error(s) in {', '.join(files_hit)}; first: "
                                      f"{findings[0].message}")[:1500],
                             findings=findings, details=details), out_json)
    return write(Verdict(**base, verdict="PASS", owner=None,
                         summary=f"cutile {cutile} ({pins} pins): {info['package']} and {IRDUMP_BIN} "
                                 f"built in {secs:.1f} s",
                         details=details,
                         artifacts={"library": details["cdylib"]["library"],
                                    "binary": details["irdump"]["binary"]}), out_json)


# --------------------------------------------------------------------------------------------
# nv_ir: NVIDIA's entries compiled to Tile IR for the reference's variants
# --------------------------------------------------------------------------------------------

def cdiv(a: int, b: int) -> int:
    """Ceiling division (the expressions' helper)."""
    return -(-a // b)


_HELPERS = {"int": int, "bool": bool, "min": min, "max": max, "cdiv": cdiv}


def evaluate(expr, env: dict, where: str):
    """Value of a ports.yaml expression (numbers pass through) over ``env`` and int/bool/min/max/
    cdiv. Raises NvPortError naming ``where`` and the cause."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return expr
    try:
        return eval(compile(str(expr), where, "eval"), {"__builtins__": {}}, {**_HELPERS, **env})
    except Exception as exc:
        raise NvPortError(f"{where}: expression {expr!r}: {type(exc).__name__}: {exc}") from None


def supported(spec: dict, dtype: str, constexprs: dict, where: str) -> bool:
    """The entry's ``supports`` predicate for one variant (True without one)."""
    if "supports" not in spec:
        return True
    return bool(evaluate(spec["supports"], {"dtype": dtype, **constexprs}, f"{where}: supports"))


def generics_for(spec: dict, entry: dict, dtype: str, constexprs: dict, where: str) -> list[str]:
    """The entry's generic arguments, in kernel.rs order, for one variant.

    ``spec``: its ports.yaml entry; ``entry``: :func:`parse_entries`' record. A type generic must
    come out as f16 / bf16 / f32, a const generic as an int (a bool counts as 0 / 1).

    Raises:
        NvPortError: the mapping names other generics than kernel.rs declares, or a value has the
            wrong kind.
    """
    names = [g for g, _ in entry["generics"]]
    if sorted(spec["generics"]) != sorted(names):
        raise NvPortError(f"{where}: generics {sorted(spec['generics'])} do not match kernel.rs's "
                          f"<{', '.join(names)}>")
    env = {"dtype": dtype, **constexprs}
    out = []
    for g, kind in entry["generics"]:
        v = evaluate(spec["generics"][g], env, f"{where}: generics/{g}")
        if kind == "type":
            if v not in ("f16", "bf16", "f32"):
                raise NvPortError(f"{where}: generics/{g}: {v!r} is not an element type (f16/bf16/f32)")
            out.append(v)
        else:
            if isinstance(v, float) or not isinstance(v, (int, bool)):
                raise NvPortError(f"{where}: generics/{g}: {v!r} is not an integer")
            out.append(str(int(v)))
    return out


def strides_for(entry: dict) -> str:
    """The dumper's stride spec: every ``&Tensor`` parameter innermost stride 1, others dynamic
    (``a=-1,1;b=-1,1``); pointer and scalar parameters have none."""
    out = []
    for name, ty in entry["params"]:
        r = tensor_rank(ty)
        if r:
            out.append(f"{name}={','.join(['-1'] * (r - 1) + ['1'])}")
    return ";".join(out)


def dump_command(binary: str | Path, op: str, entry: str, out: str | Path, target: str,
                 generics: list[str], strides: str) -> list[str]:
    """``nv-irdump <op> <entry> <out.tileirbc> <target> <generics> <strides>`` (rust/irdump.rs)."""
    return [str(binary), op, entry, str(out), target, ",".join(generics), strides]


def _variant(op_dir: Path, kernel: str, variant_id: str):

    return tp_manifest.variant_by_id(tp_manifest.load(op_dir / "manifest.yaml"), variant_id, kernel)


def other_pin(build_json, op: str, entry: str, generics: list[str], strides: str, target: str,
              text: str, tmp: Path) -> dict | None:
    """NVIDIA's entry compiled by the other pin set's ``nv-irdump`` (tileport's cutile) for the same
    variant, compared with :func:`tileport.ir_diff.diff_ir` (the shipped pins' IR as the
    reference side): ``{"cutile", "verdict", "summary", "findings"}`` (findings above info), or
    None when that build has no dumper. What differs between the two cutile versions' lowering."""
    # the IR diff is imported where it runs: the GPU stages import this module for the port table
    # alone (issue 32: the parser's import is a tenth of a second per job)
    from tileport import ir_diff

    try:
        b = read(build_json)
    except VerdictError:
        return None
    d = b.get("details") or {}
    if not (d.get("irdump") or {}).get("ok"):
        return None
    ver = ",".join((d.get("lock") or {}).get("cutile", [])) or "?"
    cmd = dump_command(d["irdump"]["binary"], op, entry, tmp, target, generics, strides)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=toolchain.cargo_env(target_dir("tileport")))
    if proc.returncode != 0:
        return {"cutile": ver, "verdict": "ERROR", "summary": (proc.stderr.strip() or "failed")[:600],
                "findings": []}
    try:
        other = toolchain.disassemble(tmp)
        r = ir_diff.diff_ir(text, other, "shipped.tileir", f"cutile-{ver}.tileir")
    except (RuntimeError, OSError, ir_diff.IRParseError) as exc:
        return {"cutile": ver, "verdict": "ERROR", "summary": str(exc)[:600], "findings": []}
    finally:
        tmp.unlink(missing_ok=True)
    return {"cutile": ver, "verdict": r.verdict, "summary": r.summary,
            "findings": [f"{f.severity} {f.category}: {f.message}"[:400] for f in r.findings
                         if f.severity != "info"][:10]}


def dump(op_dir, op, kernel, variant_id, build_json, out_bc, out_txt, out_json, target="sm_90",
         ports: dict | None = None, attempt: int = 1, other_build: str | Path | None = None) -> dict:
    """Compile the NVIDIA entry that ports ``kernel`` for one variant to Tile IR (stage ``nv_ir``).

    BLOCKED when NVIDIA's build did not pass or the entry does not implement the variant
    (``supports``); ERROR when the mapping or cutile's compiler fails (its message). Never raises
    on bad input. ``details``: nv op, entry, generics, strides, command, and with ``other_build``
    (the ``tileport`` pin set's build verdict) ``other_pin`` (:func:`other_pin`: how the same
    kernel's IR differs under tileport's cutile).
    """
    op_dir = Path(op_dir)
    base = dict(stage="nv_ir", op=op, kernel=kernel, variant=variant_id, attempt=attempt)
    try:
        ports = ports or load_ports()
        link = links(op_dir / "manifest.yaml", ports).get(kernel)
        if link is None:
            raise NvPortError(f"{op_dir / 'manifest.yaml'}: {kernel} is not a TileGym kernel "
                              f"NVIDIA ported ({PORTS.relative_to(REPO)})")
        nv_op, entry = link
        spec = ports[nv_op]["entries"][entry]
        variant = _variant(op_dir, kernel, variant_id)
    except (NvPortError, KeyError, ValueError) as exc:
        return write(Verdict(**base, verdict="ERROR", owner="tool", summary=str(exc)[:1500],
                             findings=[Finding("input", "critical", "tool", str(exc)[:3000])]), out_json)
    where = f"{PORTS.relative_to(REPO)}: {nv_op}/{entry}"
    info = {"nv_op": nv_op, "entry": entry, "reference": spec["reference"]}
    try:
        b = read(build_json)
    except VerdictError as exc:
        return write(Verdict(**base, verdict="BLOCKED", owner="tool", summary=str(exc),
                             details=info), out_json)
    if not (b["details"].get("irdump") or {}).get("ok"):
        why = f"NVIDIA's crate did not build: nv_build {b['verdict']}: {b['summary']}"
        return write(Verdict(**base, verdict="BLOCKED", owner=b["owner"] or "env", summary=why[:1500],
                             findings=[Finding("build", "critical", b["owner"] or "env", why[:3000])],
                             details=info), out_json)
    ent = (b["details"]["modules"].get(nv_op) or {}).get("entries", {}).get(entry)
    try:
        if ent is None:
            raise NvPortError(f"{where}: the wheel's {nv_op}_kernel/kernel.rs has no entry {entry}")
        if not supported(spec, variant.dtype, variant.constexprs, where):
            msg = (f"NVIDIA's {entry} does not implement {variant_id} ({where}: supports: "
                   f"{spec['supports']})")
            return write(Verdict(**base, verdict="BLOCKED", owner="kernel", summary=msg,
                                 findings=[Finding("unsupported", "critical", "kernel", msg)],
                                 details=info), out_json)
        generics = generics_for(spec, ent, variant.dtype, variant.constexprs, where)
    except NvPortError as exc:
        return write(Verdict(**base, verdict="ERROR", owner="tool", summary=str(exc)[:1500],
                             findings=[Finding("input", "critical", "tool", str(exc)[:3000])],
                             details=info), out_json)
    strides = strides_for(ent)
    out_bc = Path(out_bc)
    out_bc.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_bc.with_name(out_bc.name + ".tmp")
    cmd = dump_command(b["details"]["irdump"]["binary"], nv_op, entry, tmp, target, generics, strides)
    info.update(generics=generics, strides=strides, target=target, command=cmd)

    proc = subprocess.run(cmd, capture_output=True, text=True, env=toolchain.cargo_env(target_dir("shipped")))
    if proc.returncode != 0:
        msg = proc.stderr.strip() or f"exit {proc.returncode}"
        return write(Verdict(**base, verdict="ERROR", owner="kernel",
                             summary=f"cutile compile of NVIDIA's {entry} [{variant_id}] failed: "
                                     + msg.splitlines()[0][:1200],
                             findings=[Finding("build", "critical", "kernel", msg[:3000])],
                             details=info), out_json)
    try:
        text = toolchain.disassemble(tmp)
    except (RuntimeError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        owner = "compiler" if isinstance(exc, RuntimeError) else "env"
        return write(Verdict(**base, verdict="ERROR", owner=owner, summary=str(exc)[:1500],
                             findings=[Finding("build", "critical", owner, str(exc)[:3000])],
                             details=info), out_json)
    tmp.replace(out_bc)
    atomic_write_text(out_txt, text)
    if other_build:
        info["other_pin"] = other_pin(other_build, nv_op, entry, generics, strides, target, text, tmp)
    return write(Verdict(**base, verdict="PASS", owner=None,
                         summary=f"Tile IR of NVIDIA's {nv_op}::{entry}<{', '.join(generics)}>",
                         details=info, artifacts={"bytecode": str(out_bc), "text": str(out_txt)}),
                 out_json)


def diff(op, kernel, variant, ref_txt, ref_json, nv_txt, nv_json, out_json, attempt: int = 1) -> dict:
    """Stage ``nv_ir_diff``: tileport's IR diff (:func:`tileport.ir_diff.run`) of NVIDIA's Tile IR
    against the reference's; BLOCKED when either side has no IR (the upstream verdict's reason).
    The verdict is the IR diff's (``stage`` renamed, ``details.nv`` = the entry and generics)."""
    from tileport import ir_diff

    base = dict(stage="nv_ir_diff", op=op, kernel=kernel, variant=variant, attempt=attempt)
    ups = {}
    for name, p in (("reference_ir", ref_json), ("nv_ir", nv_json)):
        try:
            ups[name] = read(p)
        except VerdictError as exc:
            ups[name] = {"verdict": "ERROR", "summary": str(exc), "owner": "tool", "details": {}}
    bad = {k: v for k, v in ups.items() if v["verdict"] != "PASS"}
    nv = {k: ups["nv_ir"].get("details", {}).get(k) for k in ("nv_op", "entry", "reference", "generics")}
    if bad:
        why = "; ".join(f"{k} {v['verdict']}: {v['summary']}" for k, v in bad.items())
        owner = next(iter(bad.values())).get("owner") or "kernel"
        return write(Verdict(**base, verdict="BLOCKED", owner=owner, summary=f"no IR to compare: {why}"[:1500],
                             findings=[Finding("build", "critical", owner, why[:3000])],
                             details={"nv": nv}), out_json)
    d = ir_diff.run(ref_txt, nv_txt, out_json, op, kernel, variant, attempt=attempt)
    d["stage"] = "nv_ir_diff"
    d.setdefault("details", {})["nv"] = nv
    atomic_write_text(out_json, json.dumps(d, indent=2) + "\n")
    return d


# --------------------------------------------------------------------------------------------
# regenerating the committed lock files
# --------------------------------------------------------------------------------------------

def make_locks(out_dir: str | Path = NV_DIR) -> dict[str, str]:
    """Write ``Cargo.lock`` / ``Cargo.tileport.lock`` afresh (``cargo generate-lockfile`` on the
    workspace of each pin set, from the installed wheel). Returns {pin set: cutile version}."""
    import tempfile

    files = read_crate(installed_wheel())
    got = {}
    for pins, lock in LOCKS.items():
        with tempfile.TemporaryDirectory(prefix=f"nv-lock-{pins}-") as tmp:
            ws, _ = workspace_files(files, pins, with_lock=False)
            write_workspace(ws, tmp)
            subprocess.run(["cargo", "generate-lockfile", "--manifest-path", f"{tmp}/Cargo.toml"],
                           check=True)
            text = Path(tmp, "Cargo.lock").read_text()
        (Path(out_dir) / lock.name).write_text(text)
        got[pins] = ",".join(lock_versions(text).get("cutile", []))
    return got


if __name__ == "__main__":
    if sys.argv[1:] == ["lock"]:
        for k, v in make_locks().items():
            print(f"{LOCKS[k].relative_to(REPO)}: cutile {v}")
    else:
        print("usage: python -m tileport.nvidia.port lock   (regenerate rust/nvidia/Cargo*.lock)")
        sys.exit(2)
