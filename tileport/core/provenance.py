"""Provenance of a measurement: which GPU, clocks, toolchain, checkout and settings produced it.

The GPU stages (``gpu_test``, ``bench``) call :func:`collect` once, when their measurements are
taken, and store the result in their verdict as ``details.provenance``: what only the GPU node
can know (device, driver, clocks at benchmark time, torch, the node's Python) travels with the
numbers, and the report reads it from the verdicts, never from logs. The report adds what the
CPU side knows when it is built (:func:`collect` with ``gpu=False``).

Shape of :func:`collect`'s dict (every leaf a string, number, bool or null; a value that could
not be read is ``"unknown"``, never an exception)::

    {"schema": "tileport.provenance/1", "date": "2026-11-30T12:00:00+00:00",
     "gpu": {"name", "uuid", "driver", "cuda_driver", "pstate", "sm_clock_mhz",
             "mem_clock_mhz", "sm_clock_max_mhz", "mem_clock_max_mhz", "temperature_c",
             "power_w", "source"},
     "versions": {"python", "torch", "cuda_runtime", "cuda_tile", "tileiras", "cutile", "rustc"},
     "tileport": {"commit", "dirty", "describe"},
     "tilegym": {"version", "wheel_sha256", "pin"},
     "config_sha256": "<64 hex>" | "unknown", "bench": {...} | null}

Sources: the clocks, driver and name come from ``nvidia-smi --query-gpu=...
--format=csv,noheader,nounits`` (NVIDIA's ``nvidia-smi --help-query-gpu`` names the fields;
``clocks.sm`` / ``clocks.mem`` are the current clocks in MHz, sampled when :func:`collect` runs,
i.e. right after the last timed call), the CUDA version the driver supports from the
``CUDA Version:`` field of plain ``nvidia-smi``, cuTile Rust's version from the committed
``rust/host-template/Cargo.lock``, the TileGym wheel's sha256 from its hash pin
(``tilegym==V --hash=sha256:H`` in a ``requirements*.lock``/``.txt`` at the repository root)
or from pip's ``direct_url.json``.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
from datetime import datetime, timezone
from pathlib import Path

from tileport.core import toolchain

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "tileport.provenance/1"
UNKNOWN = "unknown"

# nvidia-smi --query-gpu fields (all present in every driver since R450) and our keys for them
SMI_FIELDS = {"name": "name", "uuid": "uuid", "driver_version": "driver", "pstate": "pstate",
              "clocks.sm": "sm_clock_mhz", "clocks.mem": "mem_clock_mhz",
              "clocks.max.sm": "sm_clock_max_mhz", "clocks.max.mem": "mem_clock_max_mhz",
              "temperature.gpu": "temperature_c", "power.draw": "power_w"}
_NUMERIC = {"sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz", "mem_clock_max_mhz",
            "temperature_c", "power_w"}


def _run(argv: list[str], timeout: float = 30) -> str | None:
    """stdout of ``argv`` when it exits 0, else None (missing binary, failure, timeout)."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


def _gpu_selector() -> str | None:
    """The ``nvidia-smi -i`` argument for the device this process computes on: the UUID of
    torch's device 0 when torch has initialised CUDA, else the first entry of
    ``CUDA_VISIBLE_DEVICES`` (an index or a UUID), else None (nvidia-smi's first GPU)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            uuid = str(torch.cuda.get_device_properties(0).uuid)
            return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
    except Exception:  # noqa: BLE001 - an older torch without .uuid: fall back
        pass
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return vis or None


def nvidia_smi(exe: str = "nvidia-smi", device: str | None = None) -> dict:
    """The GPU's name, UUID, driver, CUDA version the driver supports, performance state, current
    and maximum SM / memory clocks (MHz), temperature (°C) and power draw (W), read with
    ``nvidia-smi`` (``exe``: its name or path; ``device``: an ``-i`` selector, default
    :func:`_gpu_selector`). Every key is ``"unknown"`` when nvidia-smi is missing or fails (a
    machine without a GPU); ``[N/A]`` / ``[Not Supported]`` fields are ``"unknown"`` too.
    ``source`` says which: ``"nvidia-smi"`` or why not."""
    out = {k: UNKNOWN for k in SMI_FIELDS.values()} | {"cuda_driver": UNKNOWN}
    path = (exe if os.access(exe, os.X_OK) else None) if os.sep in exe else shutil.which(exe)
    if not path:
        return out | {"source": f"{exe} not found"}
    dev = device if device is not None else _gpu_selector()
    sel = ["-i", dev] if dev else []
    text = _run([path, *sel, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"])
    if text is None or not text.strip():
        return out | {"source": f"{exe} --query-gpu failed"}
    cells = [c.strip() for c in text.strip().splitlines()[0].split(",")]
    if len(cells) != len(SMI_FIELDS):
        return out | {"source": f"{exe} --query-gpu: {len(cells)} fields, expected {len(SMI_FIELDS)}"}
    for key, cell in zip(SMI_FIELDS.values(), cells):
        if not cell or cell.startswith("[") or cell.upper() == "N/A":
            continue
        if key in _NUMERIC:
            try:
                num = float(cell)
            except ValueError:
                continue
            out[key] = int(num) if num.is_integer() else num
        else:
            out[key] = cell
    header = _run([path, *sel]) or ""
    m = re.search(r"CUDA Version:\s*([0-9][0-9.]*)", header)
    if m:
        out["cuda_driver"] = m.group(1)
    return out | {"source": "nvidia-smi"}


def _dist_version(name: str) -> str:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "not installed"


def tileiras_version() -> str:
    """``tileiras --version`` as ``13.4.92`` (its ``V13.4.92`` token), the first line with
    ``release`` when there is no such token, ``unknown`` when tileiras is not found."""
    exe = os.environ.get("CUTILE_TILEIRAS_PATH")
    if not exe:
        try:
            exe = toolchain.tool("tileiras")
        except FileNotFoundError:
            return UNKNOWN
    text = _run([exe, "--version"])
    if not text:
        return UNKNOWN
    m = re.search(r"\bV(\d+(?:\.\d+)+)", text)
    if m:
        return m.group(1)
    return next((ln.strip() for ln in text.splitlines() if "release" in ln), UNKNOWN)


def cargo_lock_version(lock: str | Path, crate: str = "cutile") -> str:
    """Version of ``crate`` in a ``Cargo.lock`` (TOML ``[[package]]`` tables), ``unknown`` when
    the file or the crate is absent or the file is not TOML."""
    try:
        doc = tomllib.loads(Path(lock).read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return UNKNOWN
    return next((p.get("version", UNKNOWN) for p in doc.get("package", [])
                 if p.get("name") == crate), UNKNOWN)


def versions(repo: str | Path = REPO) -> dict:
    """Python, torch (+ the CUDA runtime it was built with, when torch is already imported),
    cuda-tile, tileiras, cutile (from ``rust/host-template/Cargo.lock``) and rustc."""
    torch = sys.modules.get("torch")
    rustc = _run(["rustc", "--version"])
    return {"python": platform.python_version(),
            "torch": _dist_version("torch"),
            "cuda_runtime": str(getattr(getattr(torch, "version", None), "cuda", None) or UNKNOWN),
            "cuda_tile": _dist_version("cuda-tile"),
            "tileiras": tileiras_version(),
            "cutile": cargo_lock_version(Path(repo) / "rust" / "host-template" / "Cargo.lock"),
            "rustc": rustc.split()[1] if rustc and len(rustc.split()) > 1 else UNKNOWN}


def git_state(repo: str | Path = REPO) -> dict:
    """``{"commit": <40 hex>, "dirty": bool, "describe": "<short>[+dirty]"}`` of the checkout at
    ``repo``; dirty = a tracked file differs from HEAD or an untracked file git does not ignore
    exists (``git status --porcelain``). ``$TILEPORT_COMMIT`` (``<sha>`` or ``<sha>+dirty``),
    set by whoever packed a copy for a GPU node, wins over git: such a copy may carry another
    commit's ``.git`` under the packed files (seen on the lent H200: a copy of the checkout's
    files over the last landed commit's repository read as that commit, dirty). Neither: every
    key is ``unknown``."""
    repo = str(repo)
    env = os.environ.get("TILEPORT_COMMIT", "").strip()
    if re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?", env):
        sha = env.split("+")[0]
        return {"commit": sha, "dirty": env.endswith("+dirty"), "describe": f"{env} (TILEPORT_COMMIT)"}
    commit = _run(["git", "-C", repo, "rev-parse", "HEAD"])
    status = _run(["git", "-C", repo, "status", "--porcelain"])
    if commit is None or status is None:
        return {"commit": UNKNOWN, "dirty": UNKNOWN, "describe": UNKNOWN}
    commit, dirty = commit.strip(), bool(status.strip())
    return {"commit": commit, "dirty": dirty, "describe": commit[:12] + ("+dirty" if dirty else "")}


_PIN = re.compile(r"^\s*tilegym\s*==\s*([^\s;\\]+)(.*?)(?=^\S|\Z)", re.M | re.S)
_HASH = re.compile(r"--hash[= ]sha256:([0-9a-fA-F]{64})")


def tilegym(repo: str | Path = REPO) -> dict:
    """The TileGym wheel tileport reads kernels from: installed ``version``, the ``wheel_sha256``
    of its hash pin (``tilegym==V --hash=sha256:H``, continuation lines included, in
    ``requirements*.lock`` / ``requirements*.txt`` at ``repo``; the first hash of the pin) or
    else of pip's ``direct_url.json`` (``archive_info.hashes.sha256``), and ``pin`` (the file
    that pins it). ``"not installed"`` / ``unknown`` where absent."""
    out = {"version": _dist_version("tilegym"), "wheel_sha256": UNKNOWN, "pin": UNKNOWN}
    for f in sorted(Path(repo).glob("requirements*.lock")) + sorted(Path(repo).glob("requirements*.txt")):
        try:
            text = f.read_text()
        except OSError:
            continue
        m = _PIN.search(text)
        if m:
            h = _HASH.search(m.group(2))
            out["pin"] = f"{f.name}: tilegym=={m.group(1)}"
            if h:
                out["wheel_sha256"] = h.group(1).lower()
            break
    if out["wheel_sha256"] == UNKNOWN and out["version"] != "not installed":
        try:
            du = md.distribution("tilegym").read_text("direct_url.json")
            h = (json.loads(du or "{}").get("archive_info") or {}).get("hashes", {}).get("sha256")
            if h:
                out["wheel_sha256"] = h.lower()
        except (md.PackageNotFoundError, ValueError, AttributeError):
            pass
    return out


def config_sha256(config: dict | str | Path | None = None, repo: str | Path = REPO) -> str:
    """sha256 of a workflow configuration as canonical JSON (sorted keys, so YAML layout and
    comments do not count): ``config`` as a dict, or a YAML file (default ``repo/config.yaml``).
    ``unknown`` when the file is missing or not YAML."""
    if not isinstance(config, dict):
        import yaml

        try:
            config = yaml.safe_load(Path(config or Path(repo) / "config.yaml").read_text())
        except (OSError, yaml.YAMLError):
            return UNKNOWN
    blob = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _guard(fn, *a, **k):
    try:
        return fn(*a, **k)
    except Exception as exc:  # noqa: BLE001 - provenance never costs a measurement
        return f"{UNKNOWN} ({type(exc).__name__}: {exc})"[:200]


def collect(bench: dict | None = None, config: dict | str | Path | None = None,
            repo: str | Path = REPO, gpu: bool = True, smi: str = "nvidia-smi") -> dict:
    """Everything a measurement depends on, now (see the module doc for the shape).

    ``bench``: the benchmark settings the stage used (warm-up, repetitions, L2 flush, seed, ...);
    ``config``: the workflow configuration (dict or YAML path; default ``repo/config.yaml``);
    ``gpu``: read the GPU with nvidia-smi (``smi``); False on the CPU side (report), where every
    GPU key is ``unknown``. Never raises: a part that fails reads ``unknown (<why>)``."""
    smi_out = _guard(nvidia_smi, smi) if gpu else \
        {k: UNKNOWN for k in SMI_FIELDS.values()} | {"cuda_driver": UNKNOWN, "source": "not read (CPU side)"}
    return {"schema": SCHEMA,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "gpu": smi_out,
            "versions": _guard(versions, repo),
            "tileport": _guard(git_state, repo),
            "tilegym": _guard(tilegym, repo),
            "config_sha256": _guard(config_sha256, config, repo),
            "bench": dict(bench) if bench else None}


if __name__ == "__main__":
    print(json.dumps(collect(), indent=1))
