"""Which kept GPU measurements still hold: the test's inputs hash and the bench rows per config.

One object, :class:`Kept` (results tree, operator, operator folder), owns the kept GPU
measurements of one operator: ``results/<op>/test.json``, ``bench.json`` and their kept copies
in ``results/<op>/.measured/`` (:data:`KEEP`). It reads and hashes each input once, and answers
whether a verdict still holds (:meth:`Kept.holds`), the kept test and bench verdicts that do
(:meth:`Kept.test`, :meth:`Kept.bench`: re-folded over its valid rows, :meth:`Kept.reconcile`),
the kept rows by config (:meth:`Kept.rows`), the pending configs (:meth:`Kept.pending`), and
copies measurements to and from ``.measured/`` (:meth:`Kept.snapshot`, :meth:`Kept.restore`,
:meth:`Kept.restore_bench`). gpu_test, bench, gpu_route, the summary and the report ask it;
nothing else decides. It sits below :mod:`tileport.gpu.test` and :mod:`tileport.gpu.bench`:
the bench verdict fold it needs is :mod:`tileport.gpu.fold`.

A GPU verdict holds while what it measured is unchanged:

* ``test.json`` (gpu_test): the operator's sources (``details.sources_sha``,
  :func:`tileport.host.shim.sources_sha`: its kernels' .rs and its host/ffi.rs) and the inputs a
  test reads (``details.test_inputs_sha``, :func:`tested_inputs_sha`): kernel.py, reference.py
  and the manifest **less its bench-only parts** (:data:`BENCH_ONLY`);
* a ``bench.json`` row (one perf config: kernel x variant x perf shape): the same two hashes,
  and the config is still a perf config of the manifest (:func:`tileport.gpu.harness.cases` kind
  ``perf``) with the tolerance its timed output was checked with. Adding a perf shape keeps
  every other row; the configs no valid row covers are *pending* (:meth:`Kept.pending`).

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
compiler hints, tensors, fits, reference, torch_impl, error_scale), dtypes, configs, variants,
shape_names, test_shapes, fits, tolerance, hints, tensors, known_defects (less its prose).

Old verdicts (written before ``test_inputs_sha`` existed) carry only ``details.inputs_sha``,
the hash of the three files byte for byte (:func:`tileport.gpu.harness.inputs_sha`, whose meaning
is unchanged and which new verdicts still record). Such a verdict is recognised
(:meth:`Kept.inputs_match`) when that full hash equals the operator's now, or when it identifies an
earlier manifest in the checkout's git history (:func:`legacy_test_sha`: the full hash of the
current kernel.py and reference.py with that manifest's bytes equals the verdict's) whose
test-relevant hash equals the current one: a proof by sha256, so merging perf shapes needs no
re-test of verdicts measured before this change.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from tileport.core import yamlio
from tileport.core.verdict import Finding, Verdict, VerdictError, atomic_write_text, read, write
from tileport.gpu import harness
from tileport.gpu.fold import BENCH_MEASURED, DEFAULTS, MEASURED, fold, mark_implausible, port_writers, write_csv
from tileport.host import shim as host_shim
from tileport.model import manifest as tp_manifest
from tileport.model.defects import tested_part as defects_part

#: bench-only manifest keys: top level, and under ``kernels/<kernel>`` (module doc)
BENCH_ONLY = ("perf_shapes", "perf_fits", "description")
BENCH_ONLY_KERNEL = ("perf_fits",)
#: the hash's version tag (a change of what is left out changes every hash: a new tag)
TAG = b"tileport-test-inputs-v1"
#: the folder under ``results/<op>/`` holding the kept copies (not a Snakemake output: a rerun
#: does not delete it)
KEEP = ".measured"


def tested_part(doc) -> object:
    """The parts of a parsed manifest a GPU test reads: ``doc`` less :data:`BENCH_ONLY` (and
    :data:`BENCH_ONLY_KERNEL` under each kernel). A non-mapping is returned as it is."""
    if not isinstance(doc, dict):
        return doc
    out = {k: v for k, v in doc.items() if k not in BENCH_ONLY}
    if "known_defects" in out:
        out["known_defects"] = defects_part(out["known_defects"])
    if isinstance(out.get("kernels"), dict):
        out["kernels"] = {k: ({a: b for a, b in kv.items() if a not in BENCH_ONLY_KERNEL}
                              if isinstance(kv, dict) else kv) for k, kv in out["kernels"].items()}
    return out


def _manifest_part(text: bytes) -> bytes:
    """Canonical bytes of a manifest's test-relevant part; the raw bytes when it does not parse
    (a broken manifest fails the stage anyway: any edit then changes the hash)."""
    try:
        doc = yamlio.load(text.decode("utf-8"))
    except Exception:  # noqa: BLE001 - unreadable: hash the bytes
        return b"raw\0" + text
    return b"json\0" + json.dumps(tested_part(doc), sort_keys=True, separators=(",", ":"),
                                  default=repr).encode()


def _test_sha(kernel: bytes, reference: bytes, manifest: bytes) -> str:
    """sha256 (hex) of the test-relevant part of the three files' bytes (:func:`tested_inputs_sha`)."""
    h = hashlib.sha256(TAG + b"\0")
    for name, data in (("kernel.py", kernel), ("reference.py", reference),
                       ("manifest.yaml", _manifest_part(manifest))):
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def tested_inputs_sha(op_dir: str | Path) -> str:
    """sha256 (hex) of what an operator's GPU test reads: kernel.py (the one the stages read,
    :func:`tileport.core.source.kernel_py`), reference.py, and the manifest less its bench-only
    parts (module doc); a missing file counts as empty. Raises OSError for an unreadable one.
    (:attr:`Kept.test_inputs_sha`, read afresh.)"""
    return Kept(None, Path(op_dir).name, op_dir).test_inputs_sha


_LEGACY: dict[tuple[str, str], str | None] = {}


def legacy_test_sha(op_dir: str | Path, full_sha: str, max_versions: int = 400,
                    files: tuple[bytes, bytes, bytes] | None = None) -> str | None:
    """The test-relevant hash of the inputs an old verdict measured, from its full
    ``inputs_sha``: the earlier ``manifest.yaml`` of ``op_dir`` in the git history of HEAD
    (at most ``max_versions`` versions, newest first) whose bytes, with the current kernel.py
    and reference.py (``files``: the operator's three files already read,
    :func:`tileport.gpu.harness.operator_files`; default: read them), give ``full_sha``; None
    when none does (kernel.py or reference.py changed too, no git, not a checkout). Cached per
    process."""
    op_dir = Path(op_dir)
    key = (str(op_dir.resolve()), full_sha)
    if key in _LEGACY:
        return _LEGACY[key]
    kernel, reference, _ = files if files is not None else harness.operator_files(op_dir)
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
                if harness.inputs_sha_of(kernel, reference, blob) == full_sha:
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
    """:meth:`Kept.inputs_match` of ``details`` against ``op_dir`` as it is now (read afresh)."""
    return Kept(None, Path(op_dir).name, op_dir).inputs_match(details)


def measured_at(path: str | Path) -> dict | None:
    """The verdict at ``path`` if it holds a GPU measurement (its word in
    :data:`tileport.gpu.fold.MEASURED`), whatever it measured; None otherwise (missing,
    unreadable, NOT_RUN, ...). Under Snakemake a job's output is removed before it runs, so this
    only protects results from a direct (command-line) run on a machine without a GPU."""
    try:
        d = read(path)
    except VerdictError:
        return None
    return d if d["verdict"] in MEASURED else None


#: the stage that writes each kept GPU verdict file
STAGES = {"test.json": "gpu_test", "bench.json": "bench"}


def unreadable(op: str, name: str, path: Path, exc: BaseException, kept: Path | None = None) -> dict:
    """The ERROR verdict (stage :data:`STAGES` of ``name``) standing for the verdict file ``path``
    that exists but does not read (``exc``: the parse error): ``details.unreadable`` (the file),
    ``details.error``, ``details.kept_copy`` (``kept``: a copy under ``.measured/`` that still holds,
    to copy back). Who acts: a file that is not JSON (truncated, half-copied: tileport writes
    verdicts atomically, so the copy from a GPU node or a full disk damaged it) is the
    environment's (owner and fail_class ``env``); JSON that breaks the verdict schema (another
    tileport version, a hand edit) is tileport's (owner ``tool``, no route)."""
    try:
        json.loads(path.read_text())
        owner, why = "tool", "JSON, but not a verdict this tileport reads (another version's, or edited)"
    except OSError:
        owner, why = "env", "the file system refuses it (permissions, I/O)"
    except ValueError:
        owner, why = "env", "not a whole JSON document: a damaged copy (the transfer from the GPU node, a full disk)"
    act = (f"copy back {kept}, which still holds this measurement" if kept else
           f"copy it again from where it was measured, or rerun {STAGES[name]}")
    what = str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}"     # file:line: the parse error
    msg = f"unreadable verdict file {what} -- {why}; {act}"
    return Verdict(stage=STAGES[name], op=op, verdict="ERROR", owner=owner,
                   fail_class=owner if owner == "env" else None, summary=msg[:600],
                   findings=[Finding("input", "critical", owner, msg[:1500])],
                   details={"unreadable": str(path), "error": str(exc)[:600],
                            **({"kept_copy": str(kept)} if kept else {})}).to_dict()


def config_key(kernel: str, variant: str, shape) -> tuple[str, str, str]:
    """(kernel, variant id, shape as ``AxB``): how a bench row names its config."""
    return (kernel, variant, shape if isinstance(shape, str) else "x".join(map(str, shape)))


def split_rows(rows: list[dict], perf: dict[tuple[str, str, str], dict]) -> tuple[list[dict], list[dict]]:
    """``(valid, retired)`` of a valid bench verdict's rows (its hashes already checked): a row
    stays when its config is in ``perf`` (config key -> ``{"rtol", "atol"}`` now, the manifest's
    perf configs), it is the first row of its config, and, where the row recorded them, with the
    same ``rtol`` / ``atol``; a row that is no mapping (``rows`` itself no list: one retired) is
    retired; a row
    whose launch erred (``error`` without ``blocked``: cutile's limits, or a reference that cannot
    run the config, are a property of the sources and inputs) is retired too, so that the next
    timing retries it. A row timed under the hardware's floor (``implausible``,
    :func:`tileport.gpu.fold.implausible`) stays, with its evidence: the benchmark already timed it
    twice, and a ``--pending-only`` run times it again."""
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
        ok = same_tol and key not in seen and not (r.get("error") and not r.get("blocked")
                                                   and not r.get("implausible"))
        if ok:
            seen.add(key)
        (valid if ok else retired).append(r)
    return valid, retired


def perf_configs(man: dict) -> dict[tuple[str, str, str], dict]:
    """The manifest's perf configs in manifest order: (kernel, variant id, shape ``AxB``) ->
    ``{"rtol", "atol"}`` of the call (:func:`tileport.gpu.harness.cases` kind ``perf``,
    :func:`tileport.gpu.harness.tolerance`). Raises what those raise for a bad manifest."""
    return {config_key(k, v.id, s): harness.tolerance(man, v, s) for k, v, s in harness.cases(man, "perf")}


def other_device(doc: dict | None, env: dict) -> str | None:
    """The device a kept bench verdict ``doc`` was measured on (``details.env.device``, else
    ``details.provenance.gpu.name``) when it is not this run's (``env["device"]``,
    :func:`tileport.gpu.harness.env_versions`); None when they are the same or either is unknown.
    ``--pending-only`` then times every config: its merged verdict carries one ``env`` and one
    ``provenance``, and its geomeans are over rows of one device."""
    d = (doc or {}).get("details") or {}
    was = (d.get("env") or {}).get("device") or (((d.get("provenance") or {}).get("gpu") or {}).get("name"))
    now = (env or {}).get("device")
    return was if was and now and was != now else None


class Kept:
    """The kept GPU measurements of one operator, and whether they still hold (module doc).

    ``results``: the results tree holding ``<op>/test.json``, ``<op>/bench.json`` and the kept
    copies ``<op>/.measured/`` (None: only the inputs side -- the hashes, :meth:`inputs_match`,
    :meth:`stamp` -- is usable; :attr:`sources_sha` raises ValueError); ``op``: the operator's
    name; ``op_dir``: its folder (kernel.py, reference.py, manifest.yaml); ``man``: its manifest
    already loaded (:func:`tileport.model.manifest.load`), else loaded on first use.

    Each input is read and hashed at most once per object, on first use: the operator's three
    files (:func:`tileport.gpu.harness.operator_files`, for :attr:`inputs_sha` and
    :attr:`test_inputs_sha`), the library sources (:attr:`sources_sha`), the manifest
    (:attr:`manifest`, :attr:`perf`) and the port writers (:attr:`writers`). An input that fails
    to read raises the same exception on every use. Verdict files are read anew for every
    question: a stage writes them while the object lives.
    """

    def __init__(self, results: str | Path | None, op: str, op_dir: str | Path, man: dict | None = None):
        self.results = Path(results) if results is not None else None
        self.op, self.op_dir = op, Path(op_dir)
        self._cache: dict[str, tuple[bool, object]] = {}
        if man is not None:
            self._cache["manifest"] = (True, man)

    def _once(self, name: str, compute):
        """``compute()``'s value, computed on the first call for ``name`` only; an exception it
        raised is raised again on every later call."""
        if name not in self._cache:
            try:
                self._cache[name] = (True, compute())
            except Exception as exc:  # noqa: BLE001 - kept, raised again on every use
                self._cache[name] = (False, exc)
        ok, value = self._cache[name]
        if not ok:
            raise value
        return value

    # -- the inputs, each read once ------------------------------------------------------------

    @property
    def files(self) -> tuple[bytes, bytes, bytes]:
        """kernel.py, reference.py, manifest.yaml as bytes (:func:`tileport.gpu.harness.operator_files`:
        a missing one is empty). Raises OSError for an unreadable one."""
        return self._once("files", lambda: harness.operator_files(self.op_dir))

    @property
    def inputs_sha(self) -> str:
        """sha256 (hex) of the three files byte for byte (:func:`tileport.gpu.harness.inputs_sha`)."""
        return self._once("inputs_sha", lambda: harness.inputs_sha_of(*self.files))

    @property
    def test_inputs_sha(self) -> str:
        """sha256 (hex) of what a GPU test reads: the three files, the manifest less its
        bench-only parts (:func:`tested_inputs_sha`)."""
        return self._once("test_inputs_sha", lambda: _test_sha(*self.files))

    @property
    def sources_sha(self) -> str:
        """sha256 (hex) of the library sources of the operator under ``results/<op>/``
        (:func:`tileport.host.shim.sources_sha`). Raises what that raises (OSError, ValueError,
        KeyError for a missing or malformed ffi.json), ValueError without a results tree."""
        def compute():
            if self.results is None:
                raise ValueError(f"{self.op}: no results tree to hash the library sources in")
            return host_shim.sources_sha(self.results, self.op)
        return self._once("sources_sha", compute)

    @property
    def manifest(self) -> dict:
        """The loaded manifest (:func:`tileport.model.manifest.load`). Raises ManifestError."""
        return self._once("manifest", lambda: tp_manifest.load(self.op_dir / "manifest.yaml"))

    @property
    def perf(self) -> dict[tuple[str, str, str], dict]:
        """:func:`perf_configs` of :attr:`manifest`. Raises ManifestError, HarnessError."""
        return self._once("perf", lambda: perf_configs(self.manifest))

    @property
    def writers(self) -> dict[str, str | None]:
        """kernel -> the backend that wrote its port (:func:`tileport.gpu.fold.port_writers`);
        {} without a results tree."""
        return self._once("writers", lambda: port_writers(self.results, self.op) if self.results else {})

    def _in_git(self) -> bool:
        return self._once("in_git", lambda: _in_git(self.op_dir))

    # -- whether a verdict holds -----------------------------------------------------------------

    def inputs_match(self, details: dict) -> bool:
        """A verdict's ``details`` measured the test-relevant inputs ``op_dir`` holds now:
        ``test_inputs_sha`` equal to :attr:`test_inputs_sha`; for an old verdict without it, its
        full ``inputs_sha`` equal to :attr:`inputs_sha`, or naming an earlier manifest with the
        same test-relevant part (:func:`legacy_test_sha`). False when an input is unreadable."""
        try:
            if details.get("test_inputs_sha"):
                return details["test_inputs_sha"] == self.test_inputs_sha
            old = details.get("inputs_sha")
            if not old:
                return False
            if old == self.inputs_sha:
                return True
            return legacy_test_sha(self.op_dir, old, files=self.files) == self.test_inputs_sha
        except (OSError, ValueError, TypeError, AttributeError):
            return False

    def standing(self, doc: dict) -> str:
        """Whether the measurement ``doc`` (a test or bench verdict; its word is not looked at)
        still measures what the tree holds: ``holds``; ``stale (<why>)`` (other library sources,
        sources unreadable, other test-relevant inputs); ``unproven (<why>)`` (an old verdict and
        no git history here to recognise it)."""
        d = doc.get("details") if isinstance(doc.get("details"), dict) else {}
        try:
            if d.get("sources_sha") != self.sources_sha:
                return "stale (other sources: kernels .rs or host/ffi.rs)"
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f"stale (sources unreadable: {exc})"
        if self.inputs_match(d):
            return "holds"
        if not d.get("test_inputs_sha") and d.get("inputs_sha") and not self._in_git():
            return ("unproven (written before test_inputs_sha, and no git history here to recognise it: "
                    "run python -m tileport.gpu.kept --stamp in the checkout it was measured from)")
        return "stale (kernel.py, reference.py or the manifest's test part)"

    def holds(self, doc) -> bool:
        """``doc`` is a GPU measurement (:data:`tileport.gpu.fold.MEASURED`) of the sources
        ``results/<op>`` holds now and of the operator's current test-relevant inputs
        (:meth:`standing`). A bench verdict's rows are then valid config by config
        (:meth:`reconcile`)."""
        return isinstance(doc, dict) and doc.get("verdict") in MEASURED and self.standing(doc) == "holds"

    @property
    def keep_dir(self) -> Path:
        """``results/<op>/.measured`` (:data:`KEEP`)."""
        return self.results / self.op / KEEP

    def _holding(self, name: str, first: str | Path | None):
        """(doc, file) of each of ``first`` (default ``results/<op>/<name>``) and
        ``.measured/<name>`` that reads and :meth:`holds`, in that order."""
        for src in (Path(first) if first else self.results / self.op / name, self.keep_dir / name):
            try:
                doc = read(src)
            except VerdictError:
                continue
            if self.holds(doc):
                yield doc, src

    def verdict(self, name: str, path: str | Path | None = None) -> dict | None:
        """The GPU verdict ``name`` (``test.json``, ``bench.json``) at ``path`` (default
        ``results/<op>/<name>``) as a reader takes it: the document; None when there is no such
        file; for one that exists but does not read, an ERROR verdict of its stage (:data:`STAGES`)
        in its stead (:func:`unreadable`), so that a damaged measurement never reads as a missing one.
        Raises ValueError for another ``name``."""
        if name not in STAGES:
            raise ValueError(f"Kept.verdict: {name!r}: one of {sorted(STAGES)}")
        path = Path(path) if path is not None else self.results / self.op / name
        try:
            return read(path)
        except (VerdictError, OSError, ValueError) as exc:
            if not path.exists():
                return None
            kept = None
            if self.results is not None and path == self.results / self.op / name:
                try:
                    kept = next((src for _, src in self._holding(name, path) if src != path), None)
                except (OSError, ValueError):
                    kept = None
            return unreadable(self.op, name, path, exc, kept)

    def test(self, out_json: str | Path | None = None) -> tuple[dict | None, Path | None]:
        """The kept test verdict that still holds and its file: ``out_json`` (default
        ``results/<op>/test.json``) if it is one, else ``.measured/test.json``; ``(None, None)``."""
        return next(self._holding("test.json", out_json), (None, None))

    def _test_doc(self) -> dict | None:
        try:
            return read(self.results / self.op / "test.json")
        except VerdictError:
            return None

    def reconcile(self, doc: dict, test: dict | None = None) -> dict | None:
        """A kept bench verdict as it stands against the operator's inputs now (no GPU; its
        library sources are not checked here: :meth:`holds` does).

        None when ``doc`` is no bench measurement (not DONE / BELOW_THRESHOLD / FAIL) or measured
        other test-relevant inputs (:meth:`inputs_match`). Otherwise the verdict re-folded
        (:func:`tileport.gpu.fold.fold`, the doc's own threshold and loop threshold, owners from
        :attr:`writers`) over its rows still valid (:func:`split_rows`: still a perf config, same
        tolerance, no launch error), with every perf config of a benchmarked variant that no valid
        row covers as pending; the doc's ``not_benchmarked``, ``perf_only_variants``,
        ``provenance``, ``retimed`` and hashes are carried over (``details.retired_rows``: rows
        dropped). ``test``: the operator's test.json, for a verdict with nothing timed.

        Raises:
            ManifestError, HarnessError: the manifest does not load, or a perf config's
                tolerance does not evaluate.
        """
        if not isinstance(doc, dict) or doc.get("verdict") not in BENCH_MEASURED:
            return None
        d = doc.get("details") if isinstance(doc.get("details"), dict) else {}
        if not self.inputs_match(d):
            return None
        man, perf = self.manifest, self.perf
        rows = d.get("rows") or []
        valid, retired = split_rows(list(rows) if isinstance(rows, list) else rows, perf)
        skipped = set(d.get("not_benchmarked") or {})
        have = {config_key(r["kernel"], r["variant"], r["shape"]) for r in valid}
        pending = [{"kernel": k, "variant": v, "shape": sh} for (k, v, sh) in perf
                   if f"{k}/{v}" not in skipped and (k, v, sh) not in have]
        loop_thr = (d.get("loop") or {}).get("threshold", DEFAULTS["loop_threshold"])
        v = fold(doc["op"], valid, float(d.get("threshold", DEFAULTS["threshold"])), doc.get("attempt", 1),
                 d.get("env"), d.get("seconds", 0.0), failed_test=test if skipped else None,
                 loop_threshold=float(loop_thr), writers=self.writers, pending=pending,
                 defects=tp_manifest.declared_defects(man))
        # as the benchmark marks one now: a row timed under the floor carries its error and evidence
        v.details["rows"] = mark_implausible(valid, d["env"].get("device") if isinstance(d.get("env"), dict) else None)
        for key in ("not_benchmarked", "perf_only_variants", "sources_sha", "inputs_sha", "test_inputs_sha",
                    "provenance", "retimed"):
            if key in d:
                v.details[key] = d[key]
        if not d.get("test_inputs_sha"):            # an old verdict, recognised: name what it holds for
            v.details["test_inputs_sha"] = self.test_inputs_sha
        v.details["retired_rows"] = len(retired)
        v.artifacts = dict(doc.get("artifacts") or {})
        return v.to_dict()

    def bench(self, out_json: str | Path | None = None) -> tuple[dict | None, Path | None]:
        """The kept bench verdict that still holds, reconciled (:meth:`reconcile`, with
        ``results/<op>/test.json``), and the file it came from: ``out_json`` (default
        ``results/<op>/bench.json``) if it is one, else ``.measured/bench.json`` (Snakemake removes
        a job's outputs before it runs); ``(None, None)`` when neither holds or the manifest no
        longer loads."""
        for doc, src in self._holding("bench.json", out_json):
            try:
                r = self.reconcile(doc, test=self._test_doc())
            except (harness.HarnessError, tp_manifest.ManifestError):
                return None, None
            if r is not None:
                return r, src
        return None, None

    def rows(self, out_json: str | Path | None, env: dict) -> tuple[dict, Path | None, str | None]:
        """The rows of the kept bench verdict (:meth:`bench`) by config key (:func:`config_key`),
        the file they come from, and the device they were measured on when it is not this run's
        (``env``: :func:`tileport.gpu.harness.env_versions`; :func:`other_device`; then no rows:
        a merge would mix devices). ``({}, None, None)`` when no kept verdict still holds."""
        doc, src = self.bench(out_json)
        other = other_device(doc, env)
        if doc is None or other:
            return {}, (src if other else None), other
        return ({config_key(r["kernel"], r["variant"], r["shape"]): r
                 for r in doc.get("details", {}).get("rows", [])}, src, None)

    def pending(self, out_json: str | Path | None = None) -> list[dict] | None:
        """The perf configs (``{"kernel", "variant", "shape"}``) of benchmarked variants that no
        valid row of the kept bench verdict covers (:meth:`bench`'s ``details.pending_configs``);
        None when no kept bench verdict holds (every config is to be timed)."""
        doc, _ = self.bench(out_json)
        return None if doc is None else doc["details"]["pending_configs"]

    # -- the kept copies under results/<op>/.measured --------------------------------------------

    def snapshot(self) -> list[str]:
        """Keep the operator's GPU measurements in ``results/<op>/.measured/``: ``test.json``,
        and ``bench.json`` + ``bench.csv``, each only when it :meth:`holds`. Called where a
        measurement is written (the GPU stages) and where one is read on the CPU side (checkpoint
        gpu_route, e.g. after verdicts were copied back from a GPU node). Returns the files kept."""
        base, kept = self.results / self.op, []
        for name, extra in (("test.json", None), ("bench.json", "bench.csv")):
            try:
                doc = read(base / name)
            except VerdictError:
                continue
            if not self.holds(doc):
                continue
            self.keep_dir.mkdir(parents=True, exist_ok=True)
            for f in (name, extra):
                if f and (base / f).exists():
                    shutil.copyfile(base / f, self.keep_dir / f)
                    kept.append(str(self.keep_dir / f))
        return kept

    def restore(self, name: str, out: str | Path, extra: tuple[str, str | Path] | None = None) -> dict | None:
        """Without a GPU: bring back the kept measurement ``.measured/<name>`` to ``out`` (byte for
        byte; ``extra`` = (kept file, destination), e.g. bench.csv) when it still :meth:`holds`;
        None otherwise (the caller writes NOT_RUN). Snakemake removes a job's outputs before it
        runs, so a GPU-less rerun (a config change upstream) would otherwise replace a GPU's
        verdict by NOT_RUN."""
        src = self.keep_dir / name
        try:
            doc = read(src)
        except VerdictError:
            return None
        if not self.holds(doc):
            return None
        if extra and not (self.keep_dir / extra[0]).exists():
            return None
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out)
        if extra:
            shutil.copyfile(self.keep_dir / extra[0], extra[1])
        print(f"tileport: no GPU here: kept measurement {src} restored (same sources and inputs)")
        return doc

    def restore_bench(self, out_json: str | Path, out_csv: str | Path) -> dict | None:
        """Without a GPU: the kept bench verdict that still holds (:meth:`bench`), written to
        ``out_json`` and ``out_csv`` as it stands now (its valid rows, the configs added since as
        pending; byte for byte when nothing changed and it came from ``.measured/``); None when
        none holds (the caller writes NOT_RUN)."""
        doc, src = self.bench(out_json)
        if doc is None:
            return None
        csv_src = src.parent / "bench.csv"
        if (not doc["details"]["configs_pending"] and not doc["details"]["retired_rows"] and csv_src.exists()
                and src != Path(out_json)):
            # nothing changed for it: the measurement comes back byte for byte
            Path(out_json).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out_json)
            shutil.copyfile(csv_src, out_csv)
            d = read(out_json)
        else:
            write_csv(doc["details"]["rows"], out_csv)
            d = write(doc, out_json)
        print(f"tileport: no GPU here: kept measurement {src} restored ({doc['details']['configs']} config(s) "
              f"valid, {doc['details']['configs_pending']} pending)")
        return d

    # -- python -m tileport.gpu.kept -------------------------------------------------------------

    def status(self) -> dict:
        """Where the operator's GPU verdicts under ``results/<op>`` stand against ``op_dir`` now:
        ``{"op", "test", "bench", "configs", "configs_pending", "retired_rows", "pending"}``;
        ``test`` / ``bench`` are ``holds``, ``stale (<why>)``, ``unproven (<why>)`` (:meth:`standing`),
        ``unreadable (<why>)``, ``missing`` or the verdict word when it is no measurement; the
        counts come from :meth:`bench`."""
        base = self.results / self.op
        out = {"op": self.op, "test": "missing", "bench": "missing", "configs": "", "configs_pending": "",
               "retired_rows": "", "pending": []}
        for name in ("test", "bench"):
            try:
                doc = read(base / f"{name}.json")
            except VerdictError as exc:
                if (base / f"{name}.json").exists():     # corrupt, truncated: say so
                    out[name] = f"unreadable ({exc})"
                continue
            out[name] = self.standing(doc) if doc["verdict"] in MEASURED else doc["verdict"]
        if out["bench"] == "holds":
            doc, _ = self.bench(base / "bench.json")
            if doc is not None:
                d = doc["details"]
                out.update(configs=d["configs"], configs_pending=d["configs_pending"],
                           retired_rows=d["retired_rows"], pending=d["pending_configs"])
        return out

    def stamp(self, path: str | Path) -> bool:
        """Add ``details.test_inputs_sha`` (:attr:`test_inputs_sha`) to the verdict at ``path``
        when it lacks it and :meth:`inputs_match` recognises it; nothing else of the file changes
        (JSON as :func:`tileport.core.verdict.write` writes it). Returns whether it wrote. Raises
        OSError, ValueError for a file that does not read as JSON."""
        path = Path(path)
        doc = json.loads(path.read_text())
        d = doc.get("details")
        if not isinstance(d, dict) or d.get("test_inputs_sha") or not self.inputs_match(d):
            return False
        d["test_inputs_sha"] = self.test_inputs_sha
        atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=False) + "\n")
        return True


def status(results: str | Path, op: str, op_dir: str | Path) -> dict:
    """:meth:`Kept.status` of ``op`` under ``results`` against ``op_dir``."""
    return Kept(results, op, op_dir).status()


def stamp(path: Path, op_dir: Path) -> bool:
    """:meth:`Kept.stamp` of the verdict at ``path`` against ``op_dir``."""
    return Kept(None, Path(op_dir).name, op_dir).stamp(path)


def main(argv=None) -> int:
    """``python -m tileport.gpu.kept [--results R] [--operators O] OP ...``: one line per
    operator saying whether its test.json and bench.json still hold and, for bench, how many
    configs are timed and pending (what ``python -m tileport.gpu.bench --op OP --pending-only``
    would time). Exit status 0."""
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
        keeper = Kept(a.results, op, Path(a.operators) / op)
        s = keeper.status()
        if a.stamp:
            for name in ("test", "bench"):
                if s[name] == "holds" and keeper.stamp(Path(a.results) / op / f"{name}.json"):
                    print(f"{op}: {name}.json stamped with test_inputs_sha")
        print(f"{op}: test {s['test']}; bench {s['bench']}"
              + (f": {s['configs']} config(s) valid, {s['configs_pending']} pending, {s['retired_rows']} row(s) "
                 f"retired" if s["configs"] != "" else ""))
        if a.list_pending:
            for p in s["pending"]:
                print(f"  pending {p['kernel']}/{p['variant']} {p['shape']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
