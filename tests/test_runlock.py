"""make run after a killed run: a stale Snakemake lock is removed, a live run's never
(tileport/core/runlock.py), on a one-rule workflow with a real Snakemake."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from tileport.core import runlock

SNAKEMAKE = os.path.join(os.path.dirname(sys.executable), "snakemake")


def snakemake(wd, *args):
    return subprocess.run([SNAKEMAKE, "--cores", "1", *args], cwd=wd, capture_output=True, text=True)


@pytest.fixture
def wd(tmp_path):
    (tmp_path / "Snakefile").write_text('rule slow:\n    output: "done"\n    shell: "sleep 60; touch {output}"\n')
    return tmp_path


def started(job):
    """``job`` once its command line shows in /proc: right after Popen returns, the kernel may
    still be in exec and /proc/<pid>/cmdline reads empty (seen on CI: a flaky test)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if Path(f"/proc/{job.pid}/cmdline").read_bytes().strip(b"\0"):
            return job
        time.sleep(0.01)
    raise AssertionError(f"pid {job.pid} never showed its command line")


def default_signals():
    """In the child: SIGINT and SIGHUP back to their default actions. A suite started under
    nohup, or in the background of a non-interactive shell, ignores them, and an ignored
    disposition survives exec: the run would outlive the signal the test sends (seen here)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def start_run(wd):
    """A Snakemake run in ``wd`` (in a process group of its own), once it holds the lock."""
    p = subprocess.Popen([SNAKEMAKE, "--cores", "1", "done"], cwd=wd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=default_signals)
    deadline = time.monotonic() + 60
    while not runlock.lock_files(wd):
        assert p.poll() is None and time.monotonic() < deadline, "snakemake did not lock its directory"
        time.sleep(0.2)
    return p


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP])
def test_killed_run_leaves_a_lock_that_make_run_removes(wd, sig):
    p = start_run(wd)
    try:
        # alive: the lock is kept and the live process is named
        status, msg = runlock.check(wd, SNAKEMAKE)
        assert status == 2 and f"pid {p.pid}" in msg and "still alive" in msg, msg
        assert runlock.lock_files(wd)
    finally:
        os.killpg(p.pid, sig)       # the run and its job, as a closed terminal or the OOM killer
        p.wait(timeout=60)
    deadline = time.monotonic() + 10
    while runlock.live_processes(wd) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert runlock.lock_files(wd), "the killed run left no lock: nothing to test"
    # without the check, the next run stops with Snakemake's LockException (make run exited 2)
    blocked = snakemake(wd, "--touch", "done")
    assert blocked.returncode != 0 and "cannot be locked" in blocked.stdout + blocked.stderr
    status, msg = runlock.check(wd, SNAKEMAKE)
    assert status == 0 and "removed a stale Snakemake lock" in msg, msg
    assert runlock.lock_files(wd) == []


def test_a_job_left_running_by_a_killed_run_keeps_the_lock(wd):
    """A killed Snakemake's job may still write its outputs: the run is not over."""
    lock = wd / ".snakemake" / "locks" / "0.output.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(f"{wd}/done\n")
    script = wd / ".snakemake" / "scripts" / "tmpabc.rust_build.py"
    script.parent.mkdir(parents=True)
    script.write_text("import time\ntime.sleep(60)\n")
    job = started(subprocess.Popen([sys.executable, str(script)], cwd=wd))
    try:
        status, msg = runlock.check(wd, SNAKEMAKE)
    finally:
        job.kill()
        job.wait()
    assert status == 2 and f"pid {job.pid}" in msg and lock.exists(), msg


def test_a_job_started_through_a_symbolic_link_keeps_the_lock(tmp_path):
    """The job names its script by a path through a link (``/tmp`` a link on some CI
    machines); the check resolves both sides."""
    real = tmp_path / "real"
    script = real / ".snakemake" / "scripts" / "tmpabc.rust_build.py"
    script.parent.mkdir(parents=True)
    script.write_text("import time\ntime.sleep(60)\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    job = started(subprocess.Popen(
        [sys.executable, str(link / ".snakemake" / "scripts" / script.name)], cwd=tmp_path))
    try:
        found = runlock.live_processes(real)
        relative = runlock._runs_script(["python", ".snakemake/scripts/x.py"], str(link),
                                        str(real.resolve() / ".snakemake" / "scripts") + "/")
    finally:
        job.kill()
        job.wait()
    assert [p.pid for p in found] == [job.pid]
    assert relative


def test_lock_of_a_run_started_on_another_machine_is_left_with_the_command(wd):
    lock = wd / ".snakemake" / "locks" / "0.input.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("x\n")
    (wd / ".snakemake" / runlock.RECORD).write_text(json.dumps({"host": "login-node-7", "started": "now"}))
    status, msg = runlock.check(wd, SNAKEMAKE)
    assert status == 2 and "login-node-7" in msg and f"cd {wd} && {SNAKEMAKE} --unlock" in msg, msg
    assert lock.exists()


def test_no_lock_goes_on_silently_and_records_this_machine(wd):
    assert runlock.check(wd, SNAKEMAKE) == (0, "")
    assert runlock.read_record(wd)["host"] == os.uname().nodename


def test_make_run_checks_the_lock_before_snakemake():
    out = subprocess.run(["make", "-n", "run"], cwd=REPO, capture_output=True, text=True).stdout.splitlines()
    check = next(i for i, x in enumerate(out) if "-m tileport.core.runlock" in x)
    first_run = next(i for i, x in enumerate(out) if "/snakemake --cores" in x)
    assert check < first_run


def test_a_stage_job_left_running_by_a_killed_run_keeps_the_lock(wd):
    """A stage started by a shell: rule (python <scripts>/<stage>.py --rule R ..., tileport.core.job)
    and working in the run's directory is the run's, as a Snakemake script job is."""
    lock = wd / ".snakemake" / "locks" / "0.output.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(f"{wd}/done\n")
    script = wd / "scripts" / "rust_build.py"
    script.parent.mkdir()
    script.write_text("import time\ntime.sleep(60)\n")
    job = started(subprocess.Popen([sys.executable, str(script), "--rule", "rust_build", "{}"], cwd=wd))
    elsewhere = started(subprocess.Popen([sys.executable, str(script), "--rule", "rust_build", "{}"],
                                         cwd=wd.parent))
    try:
        status, msg = runlock.check(wd, SNAKEMAKE)
    finally:
        for p in (job, elsewhere):
            p.kill()
            p.wait()
    assert status == 2 and f"pid {job.pid}" in msg and lock.exists(), msg
    assert f"pid {elsewhere.pid}" not in msg   # another directory's job is not this run's
