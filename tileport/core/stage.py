"""Glue shared by the thin ``scripts/<stage>.py`` wrappers: import path, logs, attempts."""
from __future__ import annotations

import contextlib
import sys
import traceback
from pathlib import Path

from tileport.core.verdict import Finding, Verdict, atomic_write_text, read, write


def apply_tools(tools: dict) -> None:
    """Export config.yaml's non-empty ``tools`` paths to this job's environment, where
    :mod:`tileport.core.toolchain` and :mod:`tileport.cpu.rust_ir` look them up."""
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


@contextlib.contextmanager
def guarded(smk, stage: str, each: dict | None = None):
    """Run one job's body so that it always ends in a verdict.

    Sets the tool paths (``params.tools``), logs to ``log[0]`` (one copy per attempt), and if
    the body raises an unexpected exception writes an ERROR verdict (owner ``tool``, the
    exception named, the log path) to the job's ``verdict`` output. In every case an output the
    body did not write is created as a placeholder naming the verdict, so downstream stages and
    ``summary.csv`` still run: a broken operator never stops the others.
    ``SystemExit`` (a deliberate retry request) passes through.

    ``each`` (``{variant: verdict path}``, or ``{(kernel, variant): verdict path}`` for a job of a
    whole operator): the job handles many variants in one process (its outputs are folders,
    issue 32): a crash ends each variant still without a verdict in that ERROR, and the folders
    are created rather than replaced by a placeholder.
    """
    apply_tools(getattr(smk.params, "tools", {}) or {})
    attempt = getattr(smk.resources, "attempt", 1)
    outs = dict(smk.output.items())
    vpath = outs.get("verdict") or next((o for o in smk.output if str(o).endswith(".json")), None)
    wc = dict(smk.wildcards.items())
    with logged(smk.log[0], attempt):
        try:
            yield
        except SystemExit:
            raise
        except Exception as exc:  # a crash of tileport itself or of a tool it runs
            traceback.print_exc()
            msg = f"{stage} crashed: {type(exc).__name__}: {exc}".strip()[:1500]
            for key, path in (each or {}).items():
                kernel, variant = key if isinstance(key, tuple) else (wc.get("kernel"), key)
                if not Path(path).exists():
                    _crash_verdict(stage, wc.get("op", "?"), kernel, variant, attempt, msg, smk.log[0], path)
            if vpath and each is None:
                write(Verdict(stage=stage, op=wc.get("op", "?"), kernel=wc.get("kernel"),
                              variant=wc.get("variant"), verdict="ERROR", owner="tool",
                              attempt=attempt, summary=f"{msg} (log: {smk.log[0]})",
                              findings=[Finding("environment", "critical", "tool", msg)]), vpath)
        if each is not None:
            for o in smk.output:
                Path(o).mkdir(parents=True, exist_ok=True)
            return
        try:
            word = read(vpath)["verdict"] if vpath else "?"
        except Exception:
            word = "ERROR"
        for o in smk.output:
            if not Path(o).exists():
                atomic_write_text(o, f"# {word}: see {vpath}\n")


def _crash_verdict(stage: str, op: str, kernel, variant, attempt: int, msg: str, log, path) -> None:
    """The ERROR verdict (owner tool) of a job or variant whose body raised ``msg``."""
    write(Verdict(stage=stage, op=op, kernel=kernel, variant=variant,
                  verdict="ERROR", owner="tool", attempt=attempt, summary=f"{msg} (log: {log})",
                  findings=[Finding("environment", "critical", "tool", msg)]), path)


@contextlib.contextmanager
def each_variant(smk, stage: str, variant: str | None, verdict, outputs=(), kernel: str | None = None):
    """One variant's body inside a job that handles many variants (:func:`guarded` with
    ``each``): an unexpected exception ends this variant in an ERROR verdict (owner tool, the
    exception named) and the next variant goes on; each of ``outputs`` (paths) the body did not
    write becomes a placeholder naming the verdict, as :func:`guarded` does for a one-variant job.
    ``kernel``: the variant's kernel where the job's wildcards name none (a job per operator);
    ``variant`` None: a body that covers a whole kernel (its verdict names no variant)."""
    try:
        yield
    except Exception as exc:  # a crash of tileport itself or of a tool it runs, on this variant
        traceback.print_exc()
        where = "/".join(x for x in (kernel, variant) if x)   # a variant id may repeat across kernels
        msg = f"{stage} crashed on {where}: {type(exc).__name__}: {exc}".strip()[:1500]
        wc = dict(smk.wildcards.items())
        _crash_verdict(stage, wc.get("op", "?"), kernel if kernel is not None else wc.get("kernel"), variant,
                       getattr(smk.resources, "attempt", 1), msg, smk.log[0], verdict)
    try:
        word = read(verdict)["verdict"]
    except Exception:
        word = "ERROR"
    for o in outputs:
        if not Path(o).exists():
            atomic_write_text(o, f"# {word}: see {verdict}\n")
