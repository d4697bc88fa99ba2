"""Installed Python distributions read as text, never imported: which wheel provides a module,
its version against the checkout's pin, its site directory and its RECORD hashes.

tileport reads TileGym's kernels from the pinned ``tilegym`` wheel (``requirements-sources.txt``,
installed with ``pip --no-deps``): the importer copies them, the defects check reads their lines,
the coverage census counts their ``@ct.kernel`` functions.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: the pin file of the wheels tileport reads as text, at the checkout's root
PIN_FILE = "requirements-sources.txt"


class ImportFailed(Exception):
    """The installed distribution cannot be used (not installed, wrong version, modified file)."""



@dataclass
class Wheel:
    """An installed distribution: ``name``, ``version``, ``sha256`` of its wheel as pinned (None
    when the pin file does not name this version), its ``root`` (the site directory) and the
    sha256 of every file its RECORD lists (``{path inside the site dir: urlsafe-b64 digest}``)."""

    name: str
    version: str
    sha256: str | None
    root: Path
    record: dict[str, str]
    top: str

    def modified(self, rel: str, data: bytes) -> bool:
        """Whether ``data``, read from the file ``rel`` of the site directory, differs from the
        sha256 the RECORD lists for it (False for a file the RECORD does not list)."""
        return rel in self.record and self.record[rel] != record_digest(data)

    def modified_message(self, path: str | Path) -> str:
        """The cause :meth:`modified` stands for, naming ``path``."""
        return (f"{path}: differs from the hash in the RECORD of {self.name} {self.version}: the installed "
                f"file was modified (run make install)")


def record_digest(data: bytes) -> str:
    """A RECORD entry's digest of ``data``: urlsafe base64 of its sha256, unpadded (the wheel format,
    PEP 376 / 627)."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def checkout_pin(manifest: str | Path) -> Path | None:
    """The pin file (:data:`PIN_FILE`) of the checkout holding ``operators/<op>/manifest.yaml``, or
    None where there is none (a manifest outside a checkout: any installed version is taken)."""
    pin = Path(manifest).resolve().parent.parent.parent / PIN_FILE
    return pin if pin.is_file() else None


def read_pin(pin_file: str | Path, name: str) -> tuple[str | None, list[str]]:
    """(version, [sha256, ...]) that ``pin_file`` gives the distribution ``name`` (a
    ``name==version --hash=sha256:...`` requirement, continuation lines allowed); (None, [])
    when the file or the requirement is missing."""
    try:
        text = Path(pin_file).read_text()
    except OSError:
        return None, []
    text = re.sub(r"\\\s*\n", " ", text)
    canon = re.sub(r"[-_.]+", "-", name).lower()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"([A-Za-z0-9_.\-]+)\s*==\s*([^\s;]+)", line)
        if m and re.sub(r"[-_.]+", "-", m.group(1)).lower() == canon:
            return m.group(2), re.findall(r"--hash[=\s]sha256:([0-9a-f]{64})", line)
    return None, []


def find_wheel(module: str, pin_file: str | Path | None = None) -> Wheel:
    """The installed distribution that provides ``module``'s top-level package (found on
    ``sys.path`` through its ``.dist-info``, never by importing).

    Raises:
        ImportFailed: no installed distribution provides it, or its version differs from the
            one ``pin_file`` pins.
    """
    top = module.split(".", 1)[0]
    names = _distributions_of(top)
    if not names:
        raise ImportFailed(f"no installed distribution provides the package '{top}' of module "
                           f"'{module}' (make install installs {PIN_FILE} with pip --no-deps)")
    dist = md.distribution(names[0])
    name, version = dist.metadata["Name"], dist.version
    sha = None
    if pin_file is not None:
        pinned, hashes = read_pin(pin_file, name)
        if pinned is None:
            raise ImportFailed(f"{pin_file}: does not pin the distribution '{name}' that provides "
                               f"'{module}' (installed: {name} {version})")
        if pinned != version:
            raise ImportFailed(f"{pin_file}: pins {name}=={pinned} but {name} {version} is installed "
                               f"(run make install)")
        sha = hashes[0] if len(hashes) == 1 else (",".join(hashes) or None)
    return Wheel(name, version, sha, site_path(dist), dict(_record(dist)), top)


def site_path(dist: md.Distribution, rel: str = "") -> Path:
    """``rel`` inside ``dist``'s site directory, by its real path: the same environment reached
    through a link (the checkout's ``.venv/bin/python``) names the same files, so Snakemake's
    inputs of import_source and nv_build stay the same whichever spelling ran it (under the
    link's, the whole corpus reran: docs/configuration.md)."""
    return Path(dist.locate_file(rel)).resolve()


def _record(dist: md.Distribution) -> dict[str, str]:
    """{file: sha256} of ``dist``'s RECORD, parsed once per process and RECORD file state (path,
    mtime, size): Snakemake's parse of the Snakefile asks for tilegym's about 120 times."""
    path = getattr(dist, "_path", None)
    try:
        st = (Path(path) / "RECORD").stat() if path is not None else None
    except OSError:
        st = None
    if st is None:
        return _parse_record(dist)
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _RECORDS:
        _RECORDS[key] = _parse_record(dist)
    return _RECORDS[key]


#: parsed RECORDs by (dist-info folder, RECORD mtime_ns, size)
_RECORDS: dict[tuple[str, int, int], dict[str, str]] = {}


def _parse_record(dist: md.Distribution) -> dict[str, str]:
    return {str(f): f.hash.value for f in (dist.files or []) if f.hash is not None and f.hash.mode == "sha256"}


def _distributions_of(top: str) -> list[str]:
    """The installed distributions that provide the top-level package ``top``: the distribution
    of that very name when it lists the package in its top_level.txt or RECORD (tilegym,
    cuda-tile's ``cuda``: the common case, read in milliseconds), else the scan of every
    installed distribution (:func:`_packages`, about 1 s on a full venv)."""
    try:
        dist = md.distribution(top)
    except md.PackageNotFoundError:
        dist = None
    if dist is not None:
        tops = (dist.read_text("top_level.txt") or "").split()
        if top in tops or any(str(f).split("/", 1)[0] == top for f in (dist.files or [])):
            return [dist.metadata["Name"]]
    return _packages().get(top, [])


@lru_cache(maxsize=1)
def _packages() -> dict[str, list[str]]:
    """Top-level package -> distributions (scanning every installed distribution takes ~0.2 s:
    once per process)."""
    return md.packages_distributions()
