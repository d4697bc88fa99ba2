"""Which kept GPU measurements still hold: the test's inputs hash and the bench rows per config.

A GPU verdict holds while what it measured is unchanged:

* ``test.json`` (gpu_test): the operator's sources (``details.sources_sha``,
  :func:`tileport.host.shim.sources_sha`: its kernels' .rs and its host/ffi.rs) and the inputs a
  test reads (``details.test_inputs_sha``, :func:`tested_inputs_sha`): kernel.py, reference.py
  and the manifest **less its bench-only parts** (:data:`BENCH_ONLY`);
* a ``bench.json`` row (one perf config: kernel x variant x perf shape): the same two hashes,
  and the config is still a perf config of the manifest (:func:`tileport.gpu.harness.cases` kind
  ``perf``) with the tolerance its timed output was checked with. Adding a perf shape keeps
  every other row; the configs no valid row covers are *pending* (:func:`pending`).

Left out of :func:`tested_inputs_sha`, and why (:data:`BENCH_ONLY`):

* ``perf_shapes`` and ``perf_fits`` (top level and under ``kernels/<kernel>``): only
  :func:`tileport.gpu.harness.cases` kind ``perf`` reads them; the test's calls are the
  ``test_shapes`` that ``fits`` (kind ``test``);
* ``description``: prose, read by no stage;
* ``known_defects[].effect`` and ``.evidence``: prose that the verdicts quote but decide nothing
  by. The rest of each entry stays in: ``kernel``, ``line`` and ``variants`` decide which variants
  gpu_test and bench call :data:`tileport.core.verdict.VARIANT_WORD` instead of FAIL, and the line
  their messages name (:mod:`tileport.model.defects`), so a changed declaration retests the operator;
* YAML comments, key order, quoting and layout: the hash is over the parsed manifest (canonical
  JSON), so a comment documenting a tolerance does not retire a verdict.

Everything else a test reads stays in: kernels (arrays, scalars, grid, bind, configs, variants,
compiler hints, tensors, fits, reference, torch_impl), dtypes, configs, variants, shape_names,
test_shapes, fits, tolerance, hints, tensors, known_defects (less its prose).

Old verdicts (written before ``test_inputs_sha`` existed) carry only ``details.inputs_sha``,
the hash of the three files byte for byte (:func:`tileport.gpu.harness.inputs_sha`, whose meaning
is unchanged and which new verdicts still record). Such a verdict is recognised
(:func:`inputs_match`) when that full hash equals the operator's now, or when it identifies an
earlier manifest in the checkout's git history (:func:`legacy_test_sha`: the full hash of the
current kernel.py and reference.py with that manifest's bytes equals the verdict's) whose
test-relevant hash equals the current one: a proof by sha256, so merging perf shapes needs no
re-test of verdicts measured before this change.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

#: bench-only manifest keys: top level, and under ``kernels/<kernel>`` (module doc)
BENCH_ONLY = ("perf_shapes", "perf_fits", "description")
BENCH_ONLY_KERNEL = ("perf_fits",)
#: the hash's version tag (a change of what is left out changes every hash: a new tag)
TAG = b"tileport-test-inputs-v1"


def tested_part(doc) -> object:
    """The parts of a parsed manifest a GPU test reads: ``doc`` less :data:`BENCH_ONLY` (and
    :data:`BENCH_ONLY_KERNEL` under each kernel). A non-mapping is returned as it is."""
    if not isinstance(doc, dict):
        return doc
    out = {k: v for k, v in doc.items() if k not in BENCH_ONLY}
    if "known_defects" in out:
        from tileport.model.defects import tested_part as defects_part

        out["known_defects"] = defects_part(out["known_defects"])
    if isinstance(out.get("kernels"), dict):
        out["kernels"] = {k: ({a: b for a, b in kv.items() if a not in BENCH_ONLY_KERNEL}
                              if isinstance(kv, dict) else kv) for k, kv in out["kernels"].items()}
    return out


def _manifest_part(text: bytes) -> bytes:
    """Canonical bytes of a manifest's test-relevant part; the raw bytes when it does not parse
    (a broken manifest fails the stage anyway: any edit then changes the hash)."""
    from tileport.core import yamlio

    try:
        doc = yamlio.load(text.decode("utf-8"))
    except Exception:  # noqa: BLE001 - unreadable: hash the bytes
        return b"raw\0" + text
    return b"json\0" + json.dumps(tested_part(doc), sort_keys=True, separators=(",", ":"),
                                  default=repr).encode()


def _test_sha(kernel: bytes, reference: bytes, manifest: bytes) -> str:
    h = hashlib.sha256(TAG + b"\0")
    for name, data in (("kernel.py", kernel), ("reference.py", reference),
                       ("manifest.yaml", _manifest_part(manifest))):
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def tested_inputs_sha(op_dir: str | Path) -> str:
    """sha256 (hex) of what an operator's GPU test reads: kernel.py (the one the stages read,
    :func:`tileport.core.source.kernel_py`), reference.py, and the manifest less its bench-only
    parts (module doc); a missing file counts as empty."""
    from tileport.gpu.harness import operator_files

    return _test_sha(*operator_files(op_dir))


_LEGACY: dict[tuple[str, str], str | None] = {}


def legacy_test_sha(op_dir: str | Path, full_sha: str, max_versions: int = 400) -> str | None:
    """The test-relevant hash of the inputs an old verdict measured, from its full
    ``inputs_sha``: the earlier ``manifest.yaml`` of ``op_dir`` in the git history of HEAD
    (at most ``max_versions`` versions, newest first) whose bytes, with the current kernel.py
    and reference.py, give ``full_sha``; None when none does (kernel.py or reference.py
    changed too, no git, not a checkout). Cached per process."""
    op_dir = Path(op_dir)
    key = (str(op_dir.resolve()), full_sha)
    if key in _LEGACY:
        return _LEGACY[key]
    from tileport.gpu.harness import inputs_sha_of, operator_files

    kernel, reference, _ = operator_files(op_dir)
    found = None
    try:
        git = ["git", "-C", str(op_dir)]
        prefix = subprocess.run(git + ["rev-parse", "--show-prefix"], capture_output=True, text=True,
                                check=True, timeout=30).stdout.strip()
        revs = subprocess.run(git + ["log", f"-{max_versions}", "--format=%H", "HEAD", "--", "manifest.yaml"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.split()
        if revs:
            batch = subprocess.run(git + ["cat-file", "--batch"], capture_output=True, check=True, timeout=120,
                                   input="".join(f"{r}:{prefix}manifest.yaml\n" for r in revs).encode()).stdout
            pos = 0
            for _ in revs:
                head_end = batch.index(b"\n", pos)
                head = batch[pos:head_end].split()
                if len(head) < 3 or head[1] != b"blob":     # "<rev>:<path> missing"
                    pos = head_end + 1
                    continue
                size = int(head[2])
                blob = batch[head_end + 1: head_end + 1 + size]
                pos = head_end + 1 + size + 1
                if inputs_sha_of(kernel, reference, blob) == full_sha:
                    found = _test_sha(kernel, reference, blob)
                    break
    except (OSError, ValueError, subprocess.SubprocessError):
        found = None
    _LEGACY[key] = found
    return found


def _in_git(op_dir: Path) -> bool:
    """``op_dir`` is in a git work tree with a HEAD (where :func:`legacy_test_sha` can look)."""
    try:
        return subprocess.run(["git", "-C", str(op_dir), "rev-parse", "--verify", "-q", "HEAD"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def inputs_match(details: dict, op_dir: str | Path) -> bool:
    """A verdict's ``details`` measured the test-relevant inputs ``op_dir`` holds now:
    ``test_inputs_sha`` equal to :func:`tested_inputs_sha`; for an old verdict without it, its
    full ``inputs_sha`` equal to the current one, or naming an earlier manifest with the same
    test-relevant part (:func:`legacy_test_sha`)."""
    from tileport.gpu.harness import inputs_sha

    try:
        if details.get("test_inputs_sha"):
            return details["test_inputs_sha"] == tested_inputs_sha(op_dir)
        old = details.get("inputs_sha")
        if not old:
            return False
        if old == inputs_sha(op_dir):
            return True
        return legacy_test_sha(op_dir, old) == tested_inputs_sha(op_dir)
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def config_key(kernel: str, variant: str, shape) -> tuple[str, str, str]:
    """(kernel, variant id, shape as ``AxB``): how a bench row names its config."""
    return (kernel, variant, shape if isinstance(shape, str) else "x".join(map(str, shape)))


def split_rows(rows: list[dict], perf: dict[tuple[str, str, str], dict]) -> tuple[list[dict], list[dict]]:
    """``(valid, retired)`` of a valid bench verdict's rows (its hashes already checked): a row
    stays when its config is in ``perf`` (config key -> ``{"rtol", "atol"}`` now, the manifest's
    perf configs), it is the first row of its config, and, where the row recorded them, with the
    same ``rtol`` / ``atol``; a row that is no mapping (``rows`` itself no list: one retired) is
    retired; a row
    whose launch erred (``error`` without ``blocked``: cutile's limits are a property of the
    sources) is retired too, so that the next timing retries it."""
    valid, retired, seen = [], [], set()
    if not isinstance(rows, list):      # a corrupt file: nothing of it is a valid row
        return [], ([rows] if rows else [])
    for r in rows:
        if not isinstance(r, dict):
            retired.append(r)
            continue
        try:
            key = config_key(r.get("kernel"), r.get("variant"), r.get("shape"))
            tol = perf.get(key)
            same_tol = tol is not None and all(r.get(k) is None or float(r[k]) == tol[k] for k in ("rtol", "atol"))
        except (TypeError, ValueError):     # a shape or a tolerance that is not one
            key, same_tol = None, False
        # a config's second row (a merge done twice, a hand-edited file) is retired: each config
        # counts once, as the first row measured it
        ok = same_tol and key not in seen and not (r.get("error") and not r.get("blocked"))
        if ok:
            seen.add(key)
        (valid if ok else retired).append(r)
    return valid, retired


def status(results: str | Path, op: str, op_dir: str | Path) -> dict:
    """Where an operator's GPU verdicts under ``results/<op>`` stand against ``op_dir`` now:
    ``{"op", "test", "bench", "configs", "configs_pending", "retired_rows", "pending"}``;
    ``test`` / ``bench`` are ``holds``, ``stale (<why>)``, ``unproven (<why>)`` (an old verdict
    and no git history to recognise it), ``unreadable (<why>)``, ``missing`` or the verdict word
    when it is no measurement; the counts come from :func:`tileport.gpu.bench.reconcile`."""
    from tileport.core.verdict import VerdictError, read
    from tileport.gpu import test as gpu_test
    from tileport.gpu.bench import kept_bench
    from tileport.host.shim import sources_sha

    results, op_dir = Path(results), Path(op_dir)
    out = {"op": op, "test": "missing", "bench": "missing", "configs": "", "configs_pending": "",
           "retired_rows": "", "pending": []}

    def why(doc):
        d = doc.get("details") or {}
        try:
            if d.get("sources_sha") != sources_sha(results, op):
                return "stale (other sources: kernels .rs or host/ffi.rs)"
        except (OSError, ValueError, KeyError) as exc:
            return f"stale (sources unreadable: {exc})"
        if inputs_match(d, op_dir):
            return "holds"
        if not d.get("test_inputs_sha") and d.get("inputs_sha") and not _in_git(op_dir):
            return ("unproven (written before test_inputs_sha, and no git history here to recognise it: "
                    "run python -m tileport.gpu.kept --stamp in the checkout it was measured from)")
        return "stale (kernel.py, reference.py or the manifest's test part)"

    for name in ("test", "bench"):
        try:
            doc = read(results / op / f"{name}.json")
        except VerdictError as exc:
            if (results / op / f"{name}.json").exists():     # corrupt, truncated: say so
                out[name] = f"unreadable ({exc})"
            continue
        out[name] = why(doc) if doc["verdict"] in gpu_test.MEASURED else doc["verdict"]
    if out["bench"] == "holds":
        doc, _ = kept_bench(results, op, op_dir, results / op / "bench.json")
        if doc is not None:
            d = doc["details"]
            out.update(configs=d["configs"], configs_pending=d["configs_pending"],
                       retired_rows=d["retired_rows"], pending=d["pending_configs"])
    return out


def stamp(path: Path, op_dir: Path) -> bool:
    """Add ``details.test_inputs_sha`` (:func:`tested_inputs_sha` of ``op_dir`` now) to the
    verdict at ``path`` when it lacks it and :func:`inputs_match` recognises it; nothing else of
    the file changes (JSON as :func:`tileport.core.verdict.write` writes it). Returns whether it wrote."""
    from tileport.core.verdict import atomic_write_text

    doc = json.loads(path.read_text())
    d = doc.get("details")
    if not isinstance(d, dict) or d.get("test_inputs_sha") or not inputs_match(d, op_dir):
        return False
    d["test_inputs_sha"] = tested_inputs_sha(op_dir)
    atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=False) + "\n")
    return True


def main(argv=None) -> int:
    """``python -m tileport.gpu.kept [--results R] [--operators O] OP ...``: one line per
    operator saying whether its test.json and bench.json still hold and, for bench, how many
    configs are timed and pending (what ``python -m tileport.gpu.bench --op OP --pending-only``
    would time). Exit status 0."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tileport.gpu.kept", description=main.__doc__.split("\n")[0])
    ap.add_argument("ops", nargs="+", help="operator folder names")
    ap.add_argument("--results", default="results", help="results tree holding <op>/test.json, bench.json")
    ap.add_argument("--operators", default="operators", help="operators folder")
    ap.add_argument("--list-pending", action="store_true", help="also print every pending config")
    ap.add_argument("--stamp", action="store_true",
                    help="write details.test_inputs_sha into every test.json / bench.json that holds "
                         "and lacks it (an old verdict recognised through git history), so that it "
                         "stays recognised where there is no git history (a GPU bundle)")
    a = ap.parse_args(argv)
    for op in a.ops:
        s = status(a.results, op, Path(a.operators) / op)
        if a.stamp:
            for name in ("test", "bench"):
                if s[name] == "holds" and stamp(Path(a.results) / op / f"{name}.json", Path(a.operators) / op):
                    print(f"{op}: {name}.json stamped with test_inputs_sha")
        print(f"{op}: test {s['test']}; bench {s['bench']}"
              + (f": {s['configs']} config(s) valid, {s['configs_pending']} pending, {s['retired_rows']} row(s) "
                 f"retired" if s["configs"] != "" else ""))
        if a.list_pending:
            for p in s["pending"]:
                print(f"  pending {p['kernel']}/{p['variant']} {p['shape']}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
