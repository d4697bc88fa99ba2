"""Benchmark many operators on one GPU node in a bounded time: compile ahead in parallel, then time.

    python3 benchmarks/gpu_bench_all.py OP [OP ...] [--jobs 15] [--block 6] [--compile-s 380]
        [--deadline-s 585] [--logs /tmp/log]

From a results/ tree whose operators passed gpu_test, on a GPU node, from the repository root:

1. compile ahead: the operators' perf configs in blocks of at most ``--block`` (a variant's configs
   together), one ``python -m tileport.gpu.bench --op OP --compile-only --shard K/N`` process per
   block, ``--jobs`` at a time, all cut at ``--compile-s`` seconds (a block not reached is
   compiled by the timing run instead). tileiras runs on the CPU, so this uses the node's cores.
2. time: every operator in this one process (``tileport.gpu.bench.main`` with ``--pending-only``
   and ``--budget-s`` = the seconds left before ``--deadline-s``, counted from the start), so
   torch and the host library load once; the timing reads the cubins from the JIT disk caches.
   Each operator's console goes to ``<logs>/bench-<op>.log``; one line per operator here.

A run cut by the deadline leaves pending configs (bench.json says which); running the script
again with the same operators times those (``--pending-only``). A lost CUDA context ends the
timing: the operators after it are named, to run again. Prints the figures; asserts nothing.
Measured: docs/results/h100-2026-12-06 (an H100, 330 configs in 1,706 s of three such calls).
"""
from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def blocks(configs: int, block: int) -> int:
    """Number of ``--shard`` blocks for an operator with ``configs`` perf configs, each of at most
    ``block`` configs (0 configs: none). Raises ValueError for ``block`` < 1."""
    if block < 1:
        raise ValueError(f"--block {block}: want at least 1 config per block")
    return -(-configs // block)


def plan(ops: list[str], operators: Path, block: int) -> list[tuple[str, str]]:
    """The compile-ahead tasks ``(op, "K/N")`` in operator order: N = :func:`blocks` of the
    operator's perf configs (``tileport.gpu.harness.cases`` of its manifest). Raises what the
    manifest loader raises for a bad manifest (its file and line)."""
    from tileport.gpu import harness
    from tileport.model import manifest

    out = []
    for op in ops:
        n = blocks(len(harness.cases(manifest.load(operators / op / "manifest.yaml"), "perf")), block)
        out += [(op, f"{k}/{n}") for k in range(n)]
    return out


def compile_ahead(tasks: list[tuple[str, str]], jobs: int, seconds: float, logs: Path) -> tuple[int, int]:
    """Run the compile-only processes, ``jobs`` at a time; none is started after ``seconds`` and
    those still running then are stopped. Returns (blocks finished, blocks not finished)."""
    end = time.monotonic() + seconds

    def one(task):
        op, shard = task
        left = end - time.monotonic()
        if left <= 0:
            return False
        log = logs / f"warm-{op}-{shard.replace('/', 'of')}.log"
        with open(log, "w") as fh:
            try:
                rc = subprocess.run([sys.executable, "-m", "tileport.gpu.bench", "--op", op, "--gpu", "required",
                                     "--compile-only", "--shard", shard], stdout=fh, stderr=subprocess.STDOUT,
                                    timeout=left).returncode
            except subprocess.TimeoutExpired:
                return False
        return rc == 0

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(one, tasks))
    return sum(done), len(done) - sum(done)


def time_all(ops: list[str], start: float, deadline_s: float, logs: Path) -> list[str]:
    """``tileport.gpu.bench.main`` for each operator in this process, ``--budget-s`` the seconds
    left before ``deadline_s`` (from ``start``) less 20 s. Returns the operators not timed."""
    from tileport.gpu import bench

    for i, op in enumerate(ops):
        left = deadline_s - (time.monotonic() - start) - 20
        if left < 15:
            print(f"deadline: {', '.join(ops[i:])} not started", flush=True)
            return ops[i:]
        with open(logs / f"bench-{op}.log", "a") as fh, contextlib.redirect_stdout(fh), \
                contextlib.redirect_stderr(fh):
            try:
                rc = bench.main(["--op", op, "--gpu", "required", "--pending-only", "--budget-s", str(int(left))])
                lost = False
            except Exception as exc:  # noqa: BLE001 - reported, then the run decides whether to go on
                print(f"{type(exc).__name__}: {exc}")
                rc, lost = "exception", "CUDA" in str(exc)
        print(f"{op}: rc={rc}; {(logs / f'bench-{op}.log').read_text().strip().splitlines()[-1][:200]}", flush=True)
        if lost:
            print(f"the CUDA context is lost: run again for {', '.join(ops[i + 1:])}", flush=True)
            return ops[i + 1:]
    return []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ops", nargs="+")
    ap.add_argument("--operators", type=Path, default=Path("operators"))
    ap.add_argument("--jobs", type=int, default=15, help="compile-ahead processes at a time")
    ap.add_argument("--block", type=int, default=6, help="configs per compile-ahead process, at most")
    ap.add_argument("--compile-s", type=float, default=380.0, help="seconds for compiling ahead (0: skip)")
    ap.add_argument("--deadline-s", type=float, default=585.0, help="seconds from the start to stop timing")
    ap.add_argument("--logs", type=Path, default=Path("/tmp/log"))
    a = ap.parse_args(argv)
    start = time.monotonic()
    a.logs.mkdir(parents=True, exist_ok=True)
    if a.compile_s > 0:
        tasks = plan(a.ops, a.operators, a.block)
        ok, cut = compile_ahead(tasks, a.jobs, a.compile_s, a.logs)
        print(f"compile ahead: {ok} of {len(tasks)} blocks in {time.monotonic() - start:.0f} s ({cut} not finished)",
              flush=True)
    left = time_all(a.ops, start, a.deadline_s, a.logs)
    print(f"timed {len(a.ops) - len(left)} of {len(a.ops)} operator(s) in {time.monotonic() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
