"""Before ``make run``: tell a stale Snakemake lock from a live run's.

Snakemake locks its working directory while it runs (``.snakemake/locks/<n>.input.lock`` and
``.output.lock``, listing the files it reads and writes) and removes the lock when it ends. A run
that is killed (SIGKILL, SIGHUP of a closed terminal, a lost login session) leaves the lock
behind, and every later run stops with Snakemake's LockException until someone runs
``snakemake --unlock``. Unlocking under a run that is still alive would let two runs write the
same files, so this module unlocks only when it can see that no Snakemake works in the
directory:

* a Snakemake process of this machine whose working directory is this one (its command line
  names ``snakemake``), or a job it started (a command line naming this directory's
  ``.snakemake/scripts/``, or a stage script started by a ``shell:`` rule working here:
  tileport.core.job.is_stage_command), is a live run: nothing is removed, the process is named;
* the last ``make run`` here was started on another machine (``.snakemake/tileport-run.json``,
  written by this module; a shared filesystem): that machine's processes cannot be seen, so
  nothing is removed and the one command that does it is printed;
* otherwise the lock is stale: ``snakemake --unlock`` removes it and the run goes on.

Processes are read from ``/proc`` (Linux). A process whose working directory cannot be read
(another user's) but whose command line names Snakemake counts as possibly live.

Command line: ``python -m tileport.core.runlock [--workdir DIR] [--snakemake EXE]``; exit status 0
(no lock, or a stale lock removed), 2 (locked by a live or unverifiable run, message on stderr).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tileport.core import job

RECORD = "tileport-run.json"


@dataclass(frozen=True)
class Process:
    """A process of this machine that may belong to a Snakemake run: ``pid``, ``cmd`` (its
    command line, joined by spaces), ``cwd`` (None when it cannot be read)."""

    pid: int
    cmd: str
    cwd: str | None


def lock_files(workdir: str | Path) -> list[Path]:
    """Snakemake's lock files in ``workdir`` (``.snakemake/locks/*.lock``), sorted."""
    d = Path(workdir) / ".snakemake" / "locks"
    return sorted(d.glob("*.lock")) if d.is_dir() else []


def _is_snakemake(argv: list[str]) -> bool:
    """Whether a command line runs Snakemake: ``snakemake ...``, ``python .../bin/snakemake ...``
    or ``python -m snakemake ...``."""
    head = argv[:3]
    if any(Path(a).name == "snakemake" for a in head):
        return True
    return any(a == "-m" and b == "snakemake" for a, b in zip(argv, argv[1:]))


def live_processes(workdir: str | Path, proc: str | Path = "/proc") -> list[Process]:
    """Processes of this machine that hold ``workdir``'s Snakemake run alive: Snakemake working in
    ``workdir`` (or in an unreadable directory: possibly there), and jobs running one of
    ``workdir``'s ``.snakemake/scripts/`` files or a stage script in ``workdir`` (a killed run's
    orphans still write its outputs).

    Args:
        workdir: the Snakemake working directory (resolved through symbolic links).
        proc: the procfs mount point.

    Returns:
        [Process], by pid; this process and its ancestors are never listed.
    """
    here = os.path.realpath(workdir)
    scripts = os.path.join(here, ".snakemake", "scripts") + os.sep
    mine = _ancestors()
    found = []
    for entry in Path(proc).iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:             # gone meanwhile, or not ours to read
            continue
        argv = [a.decode(errors="replace") for a in argv if a]
        if not argv:
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            cwd = None
        cmd = " ".join(argv)
        stage_job = cwd is not None and os.path.realpath(cwd) == here and job.is_stage_command(argv)
        if (_is_snakemake(argv) and cwd in (here, None)) or _runs_script(argv, cwd, scripts) or stage_job:
            found.append(Process(int(entry.name), cmd, cwd))
    return sorted(found, key=lambda p: p.pid)


def _runs_script(argv: list[str], cwd: str | None, scripts: str) -> bool:
    """Whether a command line names a file under ``scripts`` (a resolved directory path ending
    in a separator), its arguments resolved through symbolic links and, when relative, from the
    process's working directory: a job started as ``/tmp/w/.snakemake/scripts/x.py`` where
    ``/tmp`` is a link is the same job."""
    for arg in argv:
        if ".snakemake" not in arg:
            continue
        path = arg if os.path.isabs(arg) or cwd is None else os.path.join(cwd, arg)
        if os.path.realpath(path).startswith(scripts) or path.startswith(scripts):
            return True
    return False


def _ancestors() -> set[int]:
    """This process and its parents (make, the shell): never a run to wait for."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def read_record(workdir: str | Path) -> dict | None:
    """The last ``make run``'s record in ``workdir`` ({host, started}), or None."""
    try:
        d = json.loads((Path(workdir) / ".snakemake" / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def write_record(workdir: str | Path) -> None:
    """Record that a run starts in ``workdir`` on this machine (read by the next check)."""
    d = Path(workdir) / ".snakemake"
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{RECORD}.{os.getpid()}"
    tmp.write_text(json.dumps({"host": socket.gethostname(),
                               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n")
    tmp.replace(d / RECORD)


def check(workdir: str | Path, snakemake: str, proc: str | Path = "/proc") -> tuple[int, str]:
    """Clear a stale lock in ``workdir`` before a run, never a live run's.

    Args:
        workdir: the Snakemake working directory (the checkout for ``make run``).
        snakemake: the Snakemake executable that unlocks (``snakemake --unlock``).
        proc: the procfs mount point.

    Returns:
        (status, message): 0 when there was no lock or a stale one was removed (message says
        which, "" for no lock); 2 when the lock belongs to a live run or to one this machine
        cannot see (message names it and what to do). The record of this run is written when
        the status is 0.
    """
    workdir = Path(workdir).resolve()
    locks = lock_files(workdir)
    host = socket.gethostname()
    unlock_cmd = f"cd {workdir} && {snakemake} --unlock"
    if locks:
        live = live_processes(workdir, proc)
        if live:
            names = "; ".join(f"pid {p.pid}: {p.cmd[:160]}" + ("" if p.cwd else " (working "
                              "directory unreadable: possibly this one)") for p in live)
            return 2, (f"tileport: {workdir} is locked by a Snakemake run that is still alive "
                       f"({names}). Wait for it to end, or stop it (kill <pid>) and run make run "
                       f"again; a live run's lock is never removed.")
        rec = read_record(workdir)
        if rec and rec.get("host") not in (None, host):
            return 2, (f"tileport: {workdir} is locked ({len(locks)} lock file(s) in "
                       f".snakemake/locks) and the last make run here started on {rec['host']} "
                       f"({rec.get('started')}), whose processes this "
                       f"machine ({host}) cannot see. If no Snakemake runs there any more, "
                       f"remove the lock with:\n  {unlock_cmd}")
        p = subprocess.run([snakemake, "--unlock", "--cores", "1"], cwd=workdir,
                           capture_output=True, text=True)
        if p.returncode != 0 or lock_files(workdir):
            return 2, (f"tileport: {workdir} holds a stale Snakemake lock (no Snakemake process "
                       f"works there on {host}), but `snakemake --unlock` failed "
                       f"({p.returncode}): {(p.stderr or p.stdout).strip()[-1500:]}\n"
                       f"Fix the cause, then run:\n  {unlock_cmd}")
        msg = (f"tileport: removed a stale Snakemake lock in {workdir} (left by a run that was "
               f"killed: no Snakemake process works there on {host}); going on")
    else:
        msg = ""
    write_record(workdir)
    return 0, msg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default=".", help="Snakemake working directory")
    ap.add_argument("--snakemake", default=str(Path(sys.executable).with_name("snakemake")),
                    help="the Snakemake executable that unlocks")
    a = ap.parse_args(argv)
    status, msg = check(a.workdir, a.snakemake)
    if msg:
        print(msg, file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
