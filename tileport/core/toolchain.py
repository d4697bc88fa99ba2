"""Where the external tools live: tileirdisasm, tileiras, the CUDA headers for cutile's bindgen.

All come from PyPI wheels installed in the project's virtualenv (``nvidia-cuda-tileiras``,
``nvidia-cuda-runtime``, ``nvidia-curand``), which put them under ``<site-packages>/nvidia/cu13``
(``bin/tileirdisasm``, ``bin/tileiras``, ``include/cuda.h`` with CUDA_VERSION 13040).
``config.yaml``'s ``tools`` section can override each path.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path


def cuda_root() -> Path:
    """The ``nvidia/cu13`` folder of the running interpreter's site-packages.

    Raises:
        FileNotFoundError: the nvidia wheels are not installed in this environment.
    """
    env = os.environ.get("TILEPORT_CUDA_ROOT")
    if env:
        return Path(env)
    root = Path(sysconfig.get_paths()["purelib"]) / "nvidia" / "cu13"
    if not (root / "include" / "cuda.h").is_file():
        raise FileNotFoundError(
            f"{root}/include/cuda.h not found: install the pinned nvidia-cuda-runtime wheel "
            "(`make install`)")
    return root


def tool(name: str) -> str:
    """Path of a CUDA tool (``tileirdisasm``, ``tileiras``): env ``TILEPORT_<NAME>``, then the
    wheel's ``bin/``, then ``PATH``. Raises FileNotFoundError naming what was tried."""
    env = os.environ.get(f"TILEPORT_{name.upper()}")
    if env:
        return env
    try:
        cand = cuda_root() / "bin" / name
        if cand.is_file():
            return str(cand)
    except FileNotFoundError:
        pass
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"{name} not found (TILEPORT_{name.upper()}, nvidia/cu13/bin, PATH)")


def disassemble(bytecode: str | Path, debug_info: bool = True) -> str:
    """Text of a Tile IR bytecode file, printed by ``tileirdisasm``.

    With ``debug_info`` (``-g``) every op line ends in ``loc(#locN)`` and the text ends with the
    location aliases, which name the source line (kernel.py or the generated .rs) of each op.

    Raises:
        RuntimeError: tileirdisasm exited non-zero (message carries its stderr).
    """
    cmd = [tool("tileirdisasm")] + (["-g"] if debug_info else []) + [str(bytecode)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"tileirdisasm {bytecode} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def cache_root() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/tileport``: build caches shared by every clone (a relative
    ``XDG_CACHE_HOME`` is ignored, as the XDG Base Directory spec says; the Makefile's shared
    environment lies under it too: :func:`shared_env`)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "tileport"


def shared_env(repo: str | Path = ".") -> Path:
    """The virtual environment ``make install`` keeps for this machine, this Python and the pins of
    ``repo``: ``<cache_root>/venv/<id>``, ``<id>`` the first 12 hex digits of the SHA-1 of
    ``sys.version``, a newline and the bytes of ``requirements.lock`` and
    ``requirements-sources.txt`` (docs/configuration.md). The Makefile asks this (``VENV``).
    Raises OSError when a requirements file cannot be read."""
    h = hashlib.sha1(f"{sys.version}\n".encode())
    for name in ("requirements.lock", "requirements-sources.txt"):
        h.update((Path(repo) / name).read_bytes())
    return cache_root() / "venv" / h.hexdigest()[:12]


def compile_bytecode(root: str | Path) -> bool:
    """Write the bytecode (``__pycache__/*.pyc``) of ``root``/tileport and ``root``/scripts where it
    is missing or older than its source; True when every module compiled. Every job is a new
    Python process that imports tileport: where ``PYTHONDONTWRITEBYTECODE`` is set (this project's
    2-core machines), it compiled the package from source each time, about 0.17 s a job
    (``import tileport.flow.check``: 0.40 s without bytecode, 0.23 s with, 2026-12-07). The
    compiler writes it whatever that variable says (stdlib :mod:`compileall`); an up-to-date
    tree costs about 0.05 s. A module that does not compile is left to fail where it is imported."""
    import compileall

    return all([compileall.compile_dir(str(Path(root) / d), quiet=2) for d in ("tileport", "scripts")])


def cache_off(var: str) -> bool:
    """Whether the environment variable ``var`` (``TILEPORT_<KIND>_CACHE``) turns its cache off:
    ``off``, ``0`` or ``no``, in any case."""
    return os.environ.get(var, "").lower() in ("off", "0", "no")


def read_kept(kind: str, key: str) -> dict | None:
    """The JSON document kept under ``key`` in ``<cache_root>/<kind>/`` (:func:`keep`), or None
    (none kept, unreadable, or kept under another key with the same 40-digit prefix). A document
    read is marked used (its mtime), so :func:`keep` drops the least recently used."""
    import json

    path = cache_root() / kind / f"{key[:40]}.json"
    try:
        doc = json.loads(path.read_text())
        if not (isinstance(doc, dict) and doc.get("key") == key):
            return None
        os.utime(path)
        return doc
    except (OSError, ValueError):
        return None


def keep(kind: str, key: str, doc: dict, latest: int | None) -> None:
    """Keep the JSON document ``doc`` (a dict) under ``key`` in ``<cache_root>/<kind>/``, written
    atomically, the ``latest`` most recently written or read (:func:`read_kept`) documents of that
    kind staying (None: every one; no listing of the folder per write). A cache: a failure to
    write is ignored. Raises TypeError where ``doc`` holds a value JSON cannot carry."""
    import json

    from tileport.core.verdict import atomic_write_text

    path = cache_root() / kind / f"{key[:40]}.json"
    try:
        atomic_write_text(path, json.dumps({**doc, "key": key}))
        if latest is not None:
            for f in sorted(path.parent.glob("*.json"), key=lambda f: f.stat().st_mtime)[:-latest]:
                f.unlink(missing_ok=True)
    except OSError:
        pass


def cuda_version(include: Path) -> int:
    """``CUDA_VERSION`` defined by ``include/cuda.h`` (e.g. 13040). Raises ValueError if absent."""
    m = re.search(r"^#define CUDA_VERSION (\d+)", (include / "cuda.h").read_text(), re.M)
    if not m:
        raise ValueError(f"{include / 'cuda.h'}: no CUDA_VERSION")
    return int(m.group(1))


def toolkit_dir() -> Path:
    """A directory to give cutile's bindgen as ``CUDA_TOOLKIT_PATH``: the CUDA headers of the
    ``nvidia-cuda-runtime`` / ``nvidia-curand`` wheels, copied once per CUDA version under
    :func:`cache_root` (``cuda-toolkit-<CUDA_VERSION>/include``).

    The path must not depend on the clone: cuda-bindings' build script reruns when
    ``CUDA_TOOLKIT_PATH`` changes, which would rebuild cutile (about 85 s) in the shared cargo
    target directory whenever two clones alternate.
    """
    src = cuda_root() / "include"
    dst = cache_root() / f"cuda-toolkit-{cuda_version(src)}"
    if not (dst / "include" / "cuda.h").is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=dst.parent, prefix=f".{dst.name}."))
        shutil.copytree(src, tmp / "include")
        try:
            tmp.rename(dst)
        except OSError:          # another job assembled it first
            shutil.rmtree(tmp, ignore_errors=True)
    return dst


# rustc --message-format=short error lines: <file.rs>:<line>:<col>: error...
CARGO_ERR = re.compile(r"^(?P<file>[^\s:]+\.rs):(?P<line>\d+):(?P<col>\d+): (?P<msg>error.*)$", re.M)


def default_target_dir() -> Path:
    """Shared cargo target dir: ``$TILEPORT_CARGO_TARGET_DIR`` or ``~/.cache/tileport/cargo-target``
    (outside the clone, so every clone and CI run reuses the compiled cutile)."""
    env = os.environ.get("TILEPORT_CARGO_TARGET_DIR")
    if env:
        return Path(env)
    return cache_root() / "cargo-target"


def cargo_env(target_dir: Path) -> dict:
    """Environment for cargo and the dumper: CUDA headers (bindgen) and tileiras from the wheels."""
    env = dict(os.environ)
    root = cuda_root()
    env["CUDA_TOOLKIT_PATH"] = str(toolkit_dir())     # headers, clone-independent
    env["CARGO_TARGET_DIR"] = str(target_dir)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["CUTILE_TILEIRAS_PATH"] = tool("tileiras")    # the dumper asks its version
    env.pop("CUDA_HOME", None)  # an older toolkit there breaks tileiras (toolchain notes)
    return env


def exported_symbols(library: str | Path) -> list[str] | None:
    """Dynamic symbols a shared library defines (``nm -D --defined-only``), sorted; None without
    nm or when nm fails on it."""
    nm = shutil.which("nm")
    if not nm:
        return None
    proc = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return sorted(line.split()[-1] for line in proc.stdout.splitlines() if line.split())
