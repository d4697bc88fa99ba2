"""Glue shared by the thin ``scripts/<stage>.py`` wrappers: import path, logs, attempts."""
from __future__ import annotations

import contextlib
import sys
import traceback
from pathlib import Path


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
