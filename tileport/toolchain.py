"""Where the external tools live: tileirdisasm, tileiras, the CUDA headers for cutile's bindgen.

All come from PyPI wheels installed in the project's virtualenv (``nvidia-cuda-tileiras``,
``nvidia-cuda-runtime``, ``nvidia-curand``), which put them under ``<site-packages>/nvidia/cu13``
(``bin/tileirdisasm``, ``bin/tileiras``, ``include/cuda.h`` with CUDA_VERSION 13040).
``config.yaml``'s ``tools`` section can override each path.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
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
