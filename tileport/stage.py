"""Glue shared by the thin ``scripts/<stage>.py`` wrappers: import path, logs, attempts."""
from __future__ import annotations

import contextlib
import sys
import traceback
from pathlib import Path


def apply_tools(tools: dict) -> None:
    """Export config.yaml's non-empty ``tools`` paths to this job's environment, where
    :mod:`tileport.toolchain` and :mod:`tileport.rust_ir` look them up."""
    import os

    names = {"tileirdisasm": "TILEPORT_TILEIRDISASM", "cuda_root": "TILEPORT_CUDA_ROOT",
             "cargo_target_dir": "TILEPORT_CARGO_TARGET_DIR"}
    for key, env in names.items():
        if tools.get(key):
            os.environ[env] = str(tools[key])


@contextlib.contextmanager
def logged(log_path: str | Path, attempt: int = 1):
    """Send stdout/stderr of the block to ``log_path`` and also keep a per-attempt copy
    (``<log>.attempt-<n>``) so a failed attempt's log is never overwritten by the next one."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    keep = log_path.with_name(f"{log_path.name}.attempt-{attempt}")
    with open(log_path, "w") as fh:
        old = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = fh
        try:
            yield fh
        except BaseException:
            traceback.print_exc(file=fh)
            raise
        finally:
            sys.stdout, sys.stderr = old
            fh.flush()
            keep.write_text(log_path.read_text())
