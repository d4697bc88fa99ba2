"""One verdict shape for every stage of the workflow.

Every stage writes a JSON document that validates against :data:`VERDICT_SCHEMA`.
The orchestration (Snakemake rules, ``summary``) reads only these documents, never
logs or prose.  ``findings`` carry the evidence: a category, a severity, an owner and
the source line(s) on the reference and the port side.

Verdict words by stage (the schema accepts all of them everywhere):

* ``PASS`` / ``PASS_WITH_NOTES`` / ``FAIL`` -- a check ran and decided;
* ``BLOCKED`` -- the stage could not produce its artefact because of a named,
  known limitation (an unsupported construct, a missing upstream artefact);
* ``ERROR`` -- the tool itself failed (bad input file, failing build, crash);
* ``ALL_PASS`` -- the GPU functional test: every variant x test shape within tolerance;
* ``FAITHFUL_REF_DEFECT`` -- the GPU functional test: the port is faithful, the reference is
  defective: every variant passes or misses the PyTorch semantics exactly as the cuTile Python
  reference does under a defect the manifest declares (``known_defects``, :mod:`tileport.model.defects`;
  such a variant is ``REF_DEFECT`` in ``details.variants``), one at least; owner ``kernel``;
* ``DONE`` / ``BELOW_THRESHOLD`` -- the benchmark: the operator's geomean ratio (reference
  time / port time) is at / below the acceptance threshold of config.yaml;
* ``NOT_RUN`` -- a GPU stage on a machine without a CUDA device (``gpu: auto``) or with
  ``gpu: off``; the reason is the summary.

``owner`` says who must act: ``kernel`` (the user's kernel.py), ``manifest`` (the user's
manifest.yaml: it is malformed, disagrees with the kernel, or lacks a fact such as an array's
dtype), ``host``, ``compiler``, ``env`` or ``tool`` (tileport's own limits).
``fail_class`` (FAIL / ERROR / BLOCKED of the GPU stages) says who must act: ``kernel``,
``host`` (the FFI shim or its build), ``env`` (driver, device, toolchain), ``agent_output``.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import textwrap
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tileport.core import schema as tp_schema
from tileport.core.source import annotate

SCHEMA_ID = "tileport.verdict/1"
#: a variant whose port agrees with the defective reference (gpu_test details.variants, summary.csv
#: test): the reference's declared known defect covers it (tileport.model.defects)
VARIANT_WORD = "REF_DEFECT"
#: the operator's gpu_test verdict when every variant passes or is VARIANT_WORD, one at least the latter
OP_WORD = "FAITHFUL_REF_DEFECT"
VERDICTS = ("PASS", "PASS_WITH_NOTES", "FAIL", "BLOCKED", "ERROR", "ALL_PASS", OP_WORD, "DONE",
            "BELOW_THRESHOLD", "NOT_RUN")
#: gpu_test verdicts under which the port is faithful on every variant: the benchmark times the
#: operator and the GPU route accepts it
TEST_PASSED = ("ALL_PASS", OP_WORD)
#: a faithful port's per-variant gpu_test words (details.variants; summary.csv's test column)
VARIANT_PASSED = ("PASS", VARIANT_WORD)
FAIL_CLASSES = ("kernel", "host", "env", "agent_output")
OWNERS = ("kernel", "host", "compiler", "env", "tool", "manifest")
SEVERITIES = ("critical", "warn", "info")
CATEGORIES = (
    "memory", "reduction", "math", "cast", "control_flow", "constant", "signature",
    "hint", "syntax", "unsupported", "manifest", "build", "environment", "input",
    "numerics", "launch", "performance", "launch_facts",
)

_LOC = {
    "type": "object",
    "properties": {
        "file": {"type": "string"},
        "line": {"type": ["integer", "null"]},
        "text": {"type": "string"},
        "source": {"type": "string"},
        # for a line of an imported results/<op>/src/kernel.py: the wheel module's file:line
        # it was copied from (tileport.core.source.annotate)
        "origin": {"type": "string"},
    },
    "required": ["file"],
    "additionalProperties": False,
}

VERDICT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tileport stage verdict",
    "type": "object",
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "stage": {"type": "string", "minLength": 1},
        "op": {"type": "string", "minLength": 1},
        "kernel": {"type": ["string", "null"]},
        "variant": {"type": ["string", "null"]},
        "verdict": {"enum": list(VERDICTS)},
        "owner": {"enum": list(OWNERS) + [None]},
        "attempt": {"type": "integer", "minimum": 1},
        "fail_class": {"enum": list(FAIL_CLASSES) + [None]},
        "summary": {"type": "string"},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "category": {"enum": list(CATEGORIES)},
                    "severity": {"enum": list(SEVERITIES)},
                    "owner": {"enum": list(OWNERS)},
                    "message": {"type": "string", "minLength": 1},
                    "ref": {"anyOf": [_LOC, {"type": "null"}]},
                    "port": {"anyOf": [_LOC, {"type": "null"}]},
                },
                "required": ["category", "severity", "owner", "message"],
                "additionalProperties": False,
            },
        },
        "artifacts": {"type": "object", "additionalProperties": {"type": "string"}},
        "details": {"type": "object"},
    },
    "required": ["schema", "stage", "op", "verdict", "owner", "attempt", "summary", "findings"],
    "additionalProperties": False,
}


class VerdictError(ValueError):
    """A verdict document is missing, unreadable or does not match the schema."""


@dataclass
class Finding:
    """One piece of evidence behind a verdict.

    ``ref``/``port`` are ``{"file", "line", "text"}`` locations (1-based line) on the
    reference and the port side; either may be ``None`` when the op has no counterpart.
    """

    category: str
    severity: str
    owner: str
    message: str
    ref: dict | None = None
    port: dict | None = None


@dataclass
class Verdict:
    """A stage's machine-readable result; see :data:`VERDICT_SCHEMA`."""

    stage: str
    op: str
    verdict: str
    summary: str
    kernel: str | None = None
    variant: str | None = None
    owner: str | None = None
    attempt: int = 1
    findings: list[Finding] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    fail_class: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["fail_class"] is None:
            del d["fail_class"]
        d = {"schema": SCHEMA_ID, **d}
        return d


def brief(text: str, width: int = 300) -> str:
    """``text`` in at most ``width`` characters for a verdict's summary: cut at a word boundary
    with `` …`` (``textwrap.shorten``; runs of whitespace become one space), never inside a
    number (a cut ``expected 0.00142`` read ``expected 0.``); a first word longer than ``width``
    is cut at ``width - 1`` characters.

    Raises:
        ValueError: ``width`` < 2.
    """
    if width < 2:
        raise ValueError(f"brief: width {width} < 2")
    out = textwrap.shorten(text, width, placeholder=" …")
    if out == "…":                     # the first word alone is longer than width
        return " ".join(text.split())[:width - 1] + "…"
    return out


def loc(file: str | os.PathLike, line: int | None, text: str = "") -> dict:
    """Build a ``{"file", "line", "text"}`` location for a finding (line is 1-based)."""
    return {"file": str(file), "line": line, "text": text}


def validate(doc: dict, source: str = "<verdict>") -> dict:
    """Validate ``doc`` against :data:`VERDICT_SCHEMA` (jsonschema-rs decides, jsonschema words a
    failure: :func:`tileport.core.schema.passes`).

    Raises:
        VerdictError: naming ``source``, the JSON path and the schema's complaint.
    """
    if tp_schema.passes(VERDICT_SCHEMA, doc):
        return doc
    import jsonschema

    # the error jsonschema.validate would raise, without checking the schema itself on every call
    # (that was 0.05 s per verdict read or written, measured with cProfile)
    exc = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if exc is not None:
        path = "/".join(str(p) for p in exc.absolute_path) or "<root>"
        raise VerdictError(f"{source}: verdict field '{path}': {exc.message}")
    return doc


@functools.lru_cache(maxsize=None)
def _validator():
    """The validator of :data:`VERDICT_SCHEMA` (its draft's class; the schema checked once)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(VERDICT_SCHEMA)
    cls.check_schema(VERDICT_SCHEMA)
    return cls(VERDICT_SCHEMA)


_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so a reader
    never sees a half-written file and a crash never truncates an earlier one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates 0600; give the file the mode open() would (0666 minus the umask)
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def link_or_copy(src: str | os.PathLike, dst: str | os.PathLike) -> str:
    """Put ``src`` at ``dst`` as a hard link (a copy where the file system has none), replacing
    what was there; returns ``str(dst)``. For content-keyed artefacts named once more (a cache
    entry in a job's outputs, one file under several per-case names)."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return str(dst)


def write(verdict: Verdict | dict, path: str | os.PathLike) -> dict:
    """Validate and write a verdict as JSON (atomically). Returns the written dict.

    Every line of an imported ``results/<op>/src/kernel.py`` the verdict names also gets the
    wheel module's line it came from (:func:`tileport.core.source.annotate`)."""
    doc = annotate(verdict.to_dict() if isinstance(verdict, Verdict) else verdict)
    validate(doc, str(path))
    atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=False) + "\n")
    return doc


def read(path: str | os.PathLike) -> dict:
    """Read and validate a verdict JSON file.

    Raises:
        VerdictError: the file is missing, is not JSON, or breaks the schema.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise VerdictError(f"{path}: no verdict file") from None
    except json.JSONDecodeError as exc:
        raise VerdictError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    return validate(doc, str(path))


TRANSLATOR = "translator"       # the deterministic kernel writer's backend name
LACKS_RULE = "the translator lacks a rule"


def port_fault(writer: str | None, owner: str | None, summary: str) -> tuple[str | None, str]:
    """Who must act on a port-side failure (rustc, cutile, tileirdisasm, IR diff) and how to
    say it. A port the deterministic translator wrote is the translator's: owner ``tool`` and
    the summary says the translator lacks a rule -- never ``kernel`` (the user's kernel is
    valid: its reference compiled) nor ``compiler`` (the op is the translator's invention).
    Other writers (an LLM) keep ``owner``. ``env`` always stays ``env``."""
    if writer != TRANSLATOR or owner in (None, "env", "tool"):
        return owner, summary
    return "tool", f"{LACKS_RULE}: its port of this valid kernel fails here: {summary}"
