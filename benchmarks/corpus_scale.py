"""Issue 32's figures for the whole corpus on this machine: a benchmark, not a test (it prints,
it never asserts a time). Run it in a fresh clone (``git clone <repo> DIR && cd DIR``):

    python3 benchmarks/corpus_scale.py            # all four figures
    python3 benchmarks/corpus_scale.py --skip make_test

It times, each as a whole process (wall seconds, ``time.monotonic``):
  make_run    ``make run``: the install if missing, then every CPU stage of every operator
              (the first call in a fresh clone: cold or warm cargo cache as the machine has it)
  noop        ``snakemake --cores all results/summary.csv`` again, nothing to do
  edit        one kernel edited (a comment appended to operators/relu/kernel.py, which changes
              its content hash): ``snakemake`` up to its new published IR verdicts
              (results/relu/ir_diff/relu_kernel/), the rest of the DAG not run
  make_test   ``make test``
and prints one line per figure with the job count Snakemake planned, the date and the commit;
after ``make run``, each rule's jobs and their summed wall seconds (from Snakemake's log).
A CPU calibration (a fixed pure-Python loop, best of 5) is printed first and last: figures of
two days compare only as far as it does (the same code took 1.7 times as long on one day as on
another here, docs/configuration.md).
The edit is undone at the end.
"""
from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMK = [str(ROOT / ".venv" / "bin" / "snakemake"), "--cores", "all"]


def timed(cmd: list[str]) -> tuple[float, str]:
    """Wall seconds of ``cmd`` run in the checkout and its output; raises CalledProcessError."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
        raise subprocess.CalledProcessError(p.returncode, cmd)
    return secs, p.stdout + p.stderr


def jobs(out: str) -> int:
    """The 'total' of Snakemake's job table in ``out`` (0: nothing to do)."""
    m = re.findall(r"^total\s+(\d+)$", out, re.M)
    return sum(int(n) for n in m)


STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def rule_seconds(log: str) -> dict[str, tuple[int, float]]:
    """Per rule, (jobs, wall seconds summed over its jobs) from a Snakemake log: a job runs from
    the time stamp above its ``rule``/``localrule`` header to the one above ``Finished jobid``
    (whole seconds, as Snakemake stamps them)."""
    now, start, rule_of, out = None, {}, {}, {}
    pending_rule = None
    for line in log.splitlines():
        m = STAMP.match(line.strip())
        if m:
            now = datetime.datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            continue
        m = re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):$", line.strip())
        if m:
            pending_rule = m.group(1)
            continue
        m = re.match(r"^jobid: (\d+)$", line.strip())
        if m and pending_rule:
            start[m.group(1)], rule_of[m.group(1)], pending_rule = now, pending_rule, None
            continue
        m = re.match(r"^Finished jobid: (\d+)", line.strip())
        if m and m.group(1) in start and now is not None:
            r = rule_of[m.group(1)]
            n, secs = out.get(r, (0, 0.0))
            out[r] = (n + 1, secs + (now - start[m.group(1)]).total_seconds())
    return out


def breakdown() -> None:
    """Print :func:`rule_seconds` of the newest Snakemake log of the checkout, busiest rule first."""
    logs = sorted((ROOT / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        return
    per = rule_seconds(logs[-1].read_text())
    for r, (n, secs) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"  {r:16s} {n:5d} jobs {secs:8.0f} job-s  ({secs / n:6.1f} s per job)")


def slurm_probe() -> str:
    """What Snakemake's Slurm executor plugin meets when it is imported (it runs ``scontrol show
    config``, 10 s timeout; docs/configuration.md): "no scontrol", or its exit status and seconds.
    A slow probe is paid once per Snakemake process, so it goes beside every figure below."""
    import shutil
    if shutil.which("scontrol") is None:
        return "no scontrol"
    t0 = time.monotonic()
    try:
        rc = subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=10).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    return f"scontrol show config: exit {rc} in {time.monotonic() - t0:.1f} s"


def cpu_calibration() -> float:
    """Seconds of a fixed pure-Python loop (the sum of i * i for i < 5,000,000), best of 5: this
    machine's single-core speed now, the yardstick between figures measured on different days."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        sum(i * i for i in range(5_000_000))
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip", nargs="*", default=[], choices=["make_run", "noop", "edit", "make_test"])
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    print(f"# {datetime.date.today()} commit {commit}, {Path('/proc/cpuinfo').read_text().count('processor')} cores; "
          f"Slurm plugin's probe: {slurm_probe()}; CPU calibration {cpu_calibration():.3f} s")
    if "make_run" not in args.skip:
        secs, out = timed(["make", "run"])
        print(f"make_run   {secs:8.1f} s  jobs {jobs(out)}; job wall seconds by rule (2 run at a time):")
        breakdown()
    if "noop" not in args.skip:
        secs, out = timed(SMK + ["results/summary.csv"])
        print(f"noop       {secs:8.1f} s  jobs {jobs(out)}")
    if "edit" not in args.skip:
        k = ROOT / "operators" / "relu" / "kernel.py"
        text = k.read_text()
        try:
            k.write_text(text + "# edited by benchmarks/corpus_scale.py\n")
            secs, out = timed(SMK + ["results/relu/ir_diff/relu_kernel"])
            print(f"edit       {secs:8.1f} s  jobs {jobs(out)}  (relu's kernel.py -> its IR diff verdicts)")
        finally:
            k.write_text(text)
    if "make_test" not in args.skip:
        secs, out = timed(["make", "test"])
        tail = [ln for ln in out.splitlines() if re.search(r"\d+ passed", ln)]
        print(f"make_test  {secs:8.1f} s  {tail[-1].strip('= ') if tail else ''}")
    print(f"# CPU calibration at the end {cpu_calibration():.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
