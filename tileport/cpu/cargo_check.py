"""``cargo check`` of a port crate, its passing outcome kept by content.

``check_kernel`` (the one-kernel crate of every writer attempt) and ``rust_build`` (every
operator's crate) each ran ``cargo check`` in the target directory every crate shares, one at a
time under its lock: 296 checks for the corpus, 0.7 s (attempt) and 1.3 s (operator) each in a
rerun, more in a new clone, whose crates are new to the target directory (2026-12-07, issue 32).
rustc's verdict on a crate is a function of what it reads: the crate's ``Cargo.toml``,
``Cargo.lock`` and ``src/**/*.rs`` (the package name, which names the checkout, left out: see
:func:`key`), the toolchain (``cargo -V``, ``rustc -vV``), cargo's configuration files on the
crate's path and in ``CARGO_HOME``, and the environment that changes a build (``RUSTFLAGS`` and
kin, ``CUDA_TOOLKIT_PATH`` for cutile's bindgen). Every dependency is pinned with its checksum in
the committed ``Cargo.lock`` (crates.io). A check that passed is kept under the SHA-256 of all of
it in ``<cache_root>/cargo-check/`` (:func:`tileport.core.toolchain.keep`) with cargo's output;
the same crate checked again, in this clone or another, reads it instead of running cargo.
A failing check is never kept (its messages name this checkout's files): it runs each time.
``TILEPORT_CARGO_CHECK_CACHE=off`` bypasses the cache.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tileport.core import toolchain

CACHE_ENV = "TILEPORT_CARGO_CHECK_CACHE"
KIND = "cargo-check"
# the environment cargo and rustc read that changes what a check says (cargo's documentation,
# "Environment variables"); CUDA_TOOLKIT_PATH: the headers cutile's build script binds
ENV_KEYS = ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTDOCFLAGS", "RUSTC", "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER", "RUSTUP_TOOLCHAIN", "CARGO_BUILD_TARGET", "CARGO_BUILD_RUSTFLAGS",
            "CARGO_HOME", "CUDA_TOOLKIT_PATH")


@dataclass
class Checked:
    """One ``cargo check``: its exit status, output (text), seconds it took here, and ``kept``
    (the ISO time the same crate passed before, when read from the cache instead of run)."""
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    kept: str | None = None


def _versions(env: dict) -> list[str]:
    """``cargo -V`` and ``rustc -vV`` as ``env`` runs them (rustup's toolchain choice included).
    Raises FileNotFoundError without cargo or rustc."""
    out = []
    for cmd in (["cargo", "-V"], ["rustc", "-vV"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        out.append(f"{proc.returncode}\n{proc.stdout}{proc.stderr}")
    return out


def _cargo_configs(crate: Path, env: dict) -> list[list[str]]:
    """``[path, text]`` of every cargo configuration file cargo reads for ``crate``: ``.cargo/config``
    and ``.cargo/config.toml`` in the crate's folder and each folder above it, and in
    ``CARGO_HOME`` (default ``~/.cargo``)."""
    home = Path(env.get("CARGO_HOME") or Path.home() / ".cargo")
    folders = [d / ".cargo" for d in [crate.resolve(), *crate.resolve().parents]] + [home]
    found = []
    for d in folders:
        for name in ("config", "config.toml"):
            f = d / name
            if f.is_file():
                found.append([str(f), f.read_text(errors="replace")])
    return found


def key(crate: str | Path, cmd: list[str], env: dict, names: list[str]) -> str:
    """The cache key (hex SHA-256) of ``cmd`` checking ``crate`` in ``env``: the bytes of
    ``Cargo.toml``, ``Cargo.lock`` and every ``.rs`` file under ``src/`` (what rustc reads of a
    generated crate; the translator's ``.rs.map.json`` beside them name the checkout), with
    ``names`` (the checkout-unique package and library names) replaced by a placeholder, so two
    clones' same crate share a key; ``cmd`` without its ``--manifest-path``; the toolchain's
    versions; cargo's configuration files; :data:`ENV_KEYS`. Raises OSError when a crate file
    cannot be read, FileNotFoundError without cargo or rustc."""
    crate = Path(crate)
    files = [crate / "Cargo.toml", crate / "Cargo.lock"] + sorted((crate / "src").rglob("*.rs"))
    h = hashlib.sha256()
    for f in files:
        data = f.read_bytes()
        for name in names:
            data = data.replace(name.encode(), b"<name>")
        h.update(f.relative_to(crate).as_posix().encode() + b"\0" + hashlib.sha256(data).digest())
    args = [a for a in cmd if a != "--manifest-path" and a != str(crate / "Cargo.toml")]
    return hashlib.sha256(json.dumps([h.hexdigest(), args, _versions(env), _cargo_configs(crate, env),
                                      {k: env.get(k) for k in ENV_KEYS}]).encode()).hexdigest()


def check(crate: str | Path, cmd: list[str], env: dict, names: list[str], lock: str | Path) -> Checked:
    """Run ``cmd`` (a ``cargo check`` of ``crate``, in ``env``) under the file lock ``lock``, or
    read the outcome of the same check from the cache (:func:`key`; ``names``: the crate's
    package and library names). A check that passes is kept; one that fails is not. The cache is a cache: one
    that cannot be read or written is run around. Raises FileNotFoundError without cargo, OSError
    when the crate cannot be read."""
    t0 = time.monotonic()
    off = os.environ.get(CACHE_ENV, "").lower() in ("off", "0", "no")
    k = None if off else key(crate, cmd, env, names)
    doc = toolchain.read_kept(KIND, k) if k else None
    if doc is not None and isinstance(doc.get("stdout"), str) and isinstance(doc.get("stderr"), str):
        return Checked(0, doc["stdout"], doc["stderr"], round(time.monotonic() - t0, 1), kept=doc.get("time"))
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode == 0 and k:
        toolchain.keep(KIND, k, {"stdout": proc.stdout, "stderr": proc.stderr,
                                 "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, None)
    return Checked(proc.returncode, proc.stdout, proc.stderr, round(time.monotonic() - t0, 1))
