"""``cargo check`` of a port crate, its passing outcome kept by content.

``check_kernel`` (the one-kernel crate of every writer attempt) and ``rust_build`` (every
operator's crate) each ran ``cargo check`` in the target directory every crate shares, one at a
time under its lock: 296 checks for the corpus, 0.7 s (attempt) and 1.3 s (operator) each in a
rerun, more in a new clone, whose crates are new to the target directory (2026-12-07, issue 32).
rustc's verdict on a generated crate is a function of what it reads: the crate's ``Cargo.toml``,
``Cargo.lock`` and ``src/**/*.rs`` (the package name, which names the checkout, left out: see
:func:`key`), the toolchain (``cargo -V``, ``rustc -vV``), cargo's configuration files (in the
working folder and those above it, and in ``CARGO_HOME``: cargo's "Configuration" page) and the
environment cargo and rustc read (every ``CARGO_*``, ``RUSTC*``, ``RUSTUP_*``, ``RUST*FLAGS``,
and ``CUDA_TOOLKIT_PATH`` for cutile's bindgen). Every dependency is pinned with its checksum in
the committed ``Cargo.lock`` (crates.io). A check that passed is kept under the SHA-256 of all of
it in ``<cache_root>/cargo-check/`` (:func:`tileport.core.toolchain.keep`, never trimmed: a few KB
an entry) with cargo's output; the same crate checked again, in this clone or another, reads it
instead of running cargo. Not kept: a failing check (its messages name this checkout's files), a
check whose crate changed while it ran, and a crate that reads what the key does not hold (a
``build.rs``, a ``path`` dependency or ``[patch]``, ``include*!`` / ``env!`` / ``#[path]`` in its
sources: none comes from the translator). ``TILEPORT_CARGO_CHECK_CACHE=off`` bypasses the cache.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tileport.core import toolchain

CACHE_ENV = "TILEPORT_CARGO_CHECK_CACHE"
KIND = "cargo-check"
# the environment cargo and rustc read (cargo's "Environment variables" page: any CARGO_<setting>
# overrides its configuration); CUDA_TOOLKIT_PATH: the headers cutile's build script binds
ENV_PREFIXES = ("CARGO_", "RUSTC", "RUSTUP_", "RUSTFLAGS", "RUSTDOCFLAGS", "CUDA_TOOLKIT_PATH")
# where the target directory is and how cargo prints: not what rustc says of the crate
ENV_IGNORED = ("CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR", "CARGO_TERM_", "CARGO_MAKEFLAGS")
# what makes rustc read more than the key holds (a file outside src/**/*.rs, the environment)
_READS_MORE = re.compile(rb"\binclude(_str|_bytes)?!|\benv!|\boption_env!|#\s*\[\s*path\b")
# placeholders of the package and library names (a NUL never occurs in a crate's text)
_PLACEHOLDERS = (b"\0package\0", b"\0library\0")


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
    """``cargo -V`` and ``rustc -vV`` as ``env`` runs them (rustup's toolchain choice included);
    a tool that cannot be started is named by its error (cargo may still run: the check says)."""
    out = []
    for cmd in (["cargo", "-V"], ["rustc", "-vV"]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            out.append(f"{proc.returncode}\n{proc.stdout}{proc.stderr}")
        except OSError as exc:
            out.append(f"{cmd[0]}: {exc}")
    return out


def _cargo_configs(env: dict) -> list[list[str]]:
    """``[path, text]`` of every cargo configuration file a cargo started here reads:
    ``.cargo/config`` and ``.cargo/config.toml`` in the working folder and each folder above it
    (with ``--manifest-path`` too), and in ``CARGO_HOME`` (default ``~/.cargo``)."""
    cwd = Path.cwd().resolve()
    home = Path(env.get("CARGO_HOME") or Path.home() / ".cargo")
    found = []
    for d in [c / ".cargo" for c in (cwd, *cwd.parents)] + [home]:
        for name in ("config", "config.toml"):
            f = d / name
            if f.is_file():
                found.append([str(f), f.read_text(errors="replace")])
    return found


def _environment(env: dict) -> dict:
    """The variables of ``env`` cargo or rustc read (:data:`ENV_PREFIXES`, less :data:`ENV_IGNORED`)."""
    return {k: v for k, v in sorted(env.items())
            if k.startswith(ENV_PREFIXES) and not k.startswith(ENV_IGNORED)}


def key(crate: str | Path, cmd: list[str], env: dict, names: list[str]) -> str | None:
    """The cache key (hex SHA-256) of ``cmd`` checking ``crate`` in ``env``, or None where the
    crate reads more than the key can hold (see the module doc): :func:`crate_digest`, ``cmd``
    without its ``--manifest-path``, the toolchain's versions, cargo's configuration files and
    the environment cargo and rustc read. Raises OSError when a crate file cannot be read."""
    digest = crate_digest(crate, names)
    return None if digest is None else _key(digest, Path(crate), cmd, env)


def _key(digest: str, crate: Path, cmd: list[str], env: dict) -> str:
    """:func:`key` of the crate whose :func:`crate_digest` is ``digest``."""
    args = [a for a in cmd if a != "--manifest-path" and a != str(crate / "Cargo.toml")]
    return hashlib.sha256(json.dumps([digest, args, _versions(env), _cargo_configs(env),
                                      _environment(env)]).encode()).hexdigest()


def crate_digest(crate: str | Path, names: list[str]) -> str | None:
    """Hex SHA-256 of ``Cargo.toml``, ``Cargo.lock`` and every ``.rs`` file under ``src/`` (what
    rustc reads of a generated crate; the translator's ``.rs.map.json`` beside them name the
    checkout), with ``names`` (the checkout-unique package and library names, in that order)
    replaced by placeholders, so two clones' same crate share it; None where the crate reads
    more than these files (:func:`_manifest_reads_more`, ``build.rs``, :data:`_READS_MORE`) or a
    text holds a NUL. Raises OSError when a crate file cannot be read."""
    crate = Path(crate)
    if (crate / "build.rs").exists() or _manifest_reads_more(crate / "Cargo.toml"):
        return None
    sources = sorted((crate / "src").rglob("*.rs"))
    h = hashlib.sha256()
    for f in [crate / "Cargo.toml", crate / "Cargo.lock", *sources]:
        data = f.read_bytes()
        if b"\0" in data or (f.suffix == ".rs" and _READS_MORE.search(data)):
            return None
        for name, placeholder in zip(names, _PLACEHOLDERS):
            data = data.replace(name.encode(), placeholder)
        h.update(f.relative_to(crate).as_posix().encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def _manifest_reads_more(toml: Path) -> bool:
    """Whether ``Cargo.toml`` makes cargo read what :func:`key` does not hold: a build script, a
    ``[patch]`` / ``[replace]``, or a dependency from a path or git (crates.io ones are pinned with
    their checksums in Cargo.lock); also an unreadable manifest (cargo will say why). Raises
    OSError when it cannot be read."""
    import tomllib

    try:
        doc = tomllib.loads(toml.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return True
    if "patch" in doc or "replace" in doc or "build" in doc.get("package", {}):
        return True
    tables = [doc.get(t, {}) for t in ("dependencies", "dev-dependencies", "build-dependencies")]
    tables += [spec.get(t, {}) for spec in doc.get("target", {}).values()
               for t in ("dependencies", "dev-dependencies", "build-dependencies")]
    return any(isinstance(dep, dict) and ("path" in dep or "git" in dep) for t in tables for dep in t.values())


def _hit(k: str | None, t0: float) -> Checked | None:
    """The kept outcome under ``k`` as a :class:`Checked`, or None."""
    doc = toolchain.read_kept(KIND, k) if k else None
    if doc is not None and isinstance(doc.get("stdout"), str) and isinstance(doc.get("stderr"), str):
        return Checked(0, doc["stdout"], doc["stderr"], round(time.monotonic() - t0, 1),
                       kept=str(doc.get("time") or "an earlier run"))
    return None


def check(crate: str | Path, cmd: list[str], env: dict, names: list[str], lock: str | Path) -> Checked:
    """Run ``cmd`` (a ``cargo check`` of ``crate``, in ``env``) under the file lock ``lock``, or
    read the outcome of the same check from the cache (:func:`key`; ``names``: the crate's
    package and library names), looked up again once the lock is held (another job may have
    checked the same crate meanwhile). A check that passes is kept when the crate's key is the
    same after it as before (the crate was not changed while cargo read it); one that fails is
    not. The cache is a cache: one that cannot be read or written is run around. Raises
    FileNotFoundError without cargo, OSError when the crate cannot be read."""
    t0 = time.monotonic()
    digest = None if toolchain.cache_off(CACHE_ENV) else crate_digest(crate, names)
    k = None if digest is None else _key(digest, Path(crate), cmd, env)
    hit = _hit(k, t0)
    if hit:
        return hit
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        hit = _hit(k, t0)
        if hit:
            return hit
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        # the crate as cargo read it: its files unchanged since the key was taken
        if proc.returncode == 0 and k and crate_digest(crate, names) == digest:
            toolchain.keep(KIND, k, {"stdout": proc.stdout, "stderr": proc.stderr,
                                     "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, None)
    return Checked(proc.returncode, proc.stdout, proc.stderr, round(time.monotonic() - t0, 1))
