"""A Snakemake job as the stage scripts read it, handed over as JSON on the command line.

Snakemake's ``script:`` directive starts every job with a preamble that unpickles the job object,
which imports Snakemake in the job's process: 0.16 s of imports (``python -X importtime -c
'import snakemake.logging, snakemake.iocontainers'``), about 0.2 s of each of the ~1,700 jobs of a
whole-corpus run. The main workflow's rules run ``scripts/<stage>.py`` with a ``shell:`` command
instead (``rules/common.smk``: ``job_params``, ``job_io`` and ``stage_command``): the job's parameters
and its input, output and wildcards travel as two JSON parameters, log / threads / attempt as
arguments, the run's config as a JSON file named by ``$TILEPORT_CONFIG``. :func:`current` gives the script an
object with the attributes it read from Snakemake's (``input``, ``output``, ``params``, ``log``,
``wildcards``, ``resources.attempt``, ``threads``, ``config``, ``rule``).
Standard library only: it runs before anything else is imported. docs/architecture.md#jobs-and-their-cost.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

CONFIG_ENV = "TILEPORT_CONFIG"
SCRIPTS_ENV = "TILEPORT_SCRIPTS"
PYTHON_ENV = "TILEPORT_PYTHON"


class Items(list):
    """A list whose items may also have names (Snakemake's Namedlist as a script uses it):
    ``items[0]``, ``items.verdict`` or ``items["verdict"]``, ``items.items()``.
    A named range (``[start, end]``) reads as a list."""

    def __init__(self, values=(), names=None):
        super().__init__(values)
        self._names = {k: (v[0], v[1]) for k, v in (names or {}).items()}
        for name in self._names:   # an attribute of its own, as Snakemake's (a name such as "index" too)
            setattr(self, name, self._named(name))

    def _named(self, name):
        start, end = self._names[name]
        return self[start] if end is None else list(self[start:end])

    def __getitem__(self, key):   # items["verdict"] as items.verdict (Snakemake's too)
        if isinstance(key, str):
            if key not in self._names:
                raise KeyError(f"the job has no item named {key!r} (named: {sorted(self._names)})")
            return self._named(key)
        return super().__getitem__(key)

    def __getattr__(self, name):   # only for names the job lacks
        raise AttributeError(f"the job has no item named {name!r} (named: {sorted(self._names)})")

    def items(self):
        return [(k, self._named(k)) for k in self._names]


def _named_list(values) -> dict:
    """{"values": [...], "names": {name: [start, end|None]}} of a Snakemake Namedlist."""
    names = dict(values._get_names())
    return {"values": [v if isinstance(v, (str, int, float, bool, type(None))) else str(v) for v in values],
            "names": {k: list(v) for k, v in names.items()}}


def params(**values):
    """A stage rule's parameter ``job``: a function of the job's wildcards that Snakemake calls per
    job, returning the JSON text of ``values`` (each a value, or a function of the wildcards).
    Snakemake's parameter rerun trigger compares this text, so a change of any value reruns the
    job; it skips a parameter function that takes input, output, threads or resources (a
    "derived" one: ``Rule._is_deriving_function``, Snakemake 9), hence wildcards only here and the
    job's files in a parameter of their own (:func:`io`).

    Raises:
        TypeError: a value that JSON cannot carry, or a value function taking more than the
            wildcards (each named in the message).
    """
    for k, v in values.items():
        if callable(v) and len(inspect.signature(v).parameters) != 1:
            raise TypeError(f"job parameter {k!r}: a function of the wildcards alone (a rerun trigger), "
                            f"not of {list(inspect.signature(v).parameters)}")

    def job(wildcards):
        evaluated = {k: (v(wildcards) if callable(v) else v) for k, v in values.items()}
        try:
            return json.dumps(evaluated, sort_keys=True, separators=(",", ":"))
        except TypeError as exc:
            bad = [k for k, v in evaluated.items() if not _jsonable(v)]
            raise TypeError(f"job parameters {bad} cannot be passed as JSON: {exc}") from None

    return job


def io(wildcards, input, output):
    """A stage rule's parameter ``io``: the JSON text of the job's wildcards, input and output
    (with their names). Derived from the job's files, so never a parameter rerun trigger
    (Snakemake's input and mtime triggers see those files)."""
    return json.dumps({"wildcards": dict(wildcards.items()), "input": _named_list(input),
                       "output": _named_list(output)}, sort_keys=True, separators=(",", ":"))


def _jsonable(v) -> bool:
    try:
        json.dumps(v)
        return True
    except TypeError:
        return False


def write_config(config: dict, folder: str | Path) -> Path:
    """Write the run's config as JSON to ``folder/config-<sha256 prefix>.json`` (once per content;
    written to a temporary file and renamed, so concurrent runs on a shared file system agree) and
    name it in ``$TILEPORT_CONFIG`` for the jobs this process starts. Returns the path.

    The config is validated against its schema before this (rules/common.smk): a value JSON cannot
    carry is refused, never written as its text.

    Raises:
        TypeError: a value JSON cannot carry (JSON's message); OSError: the folder cannot be written.
    """
    try:
        text = json.dumps(config, sort_keys=True)
    except TypeError as exc:
        raise TypeError(f"the run's config cannot be handed to the jobs as JSON: {exc}") from None
    path = Path(folder).resolve() / f"config-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.is_file():
        from tileport.core.verdict import atomic_write_text  # not at import: the jobs read this module first

        atomic_write_text(path, text)
    os.environ[CONFIG_ENV] = str(path)
    return path


def _config() -> dict:
    path = os.environ.get(CONFIG_ENV)
    if not path:
        raise SystemExit(f"tileport: ${CONFIG_ENV} is not set: run the stage scripts through the workflow "
                         f"(snakemake), which writes the run's config and names it there")
    return json.loads(Path(path).read_text())


def is_stage_command(argv: list[str]) -> bool:
    """Whether a process's command line is a stage job as ``rules/common.smk`` starts it
    (``python <scripts>/<stage>.py --rule R ...``, or the shell running it): tileport.core.runlock
    counts such a process working in a run's directory as that run's (a killed run's orphan)."""
    for i, a in enumerate(argv):
        if a.endswith(".py") and "--rule" in argv[i + 1:]:
            return True
        if " --rule " in a and ".py" in a:   # bash -c '... python ".../x.py" --rule R ...'
            return True
    return False


def current(argv: list[str] | None = None) -> SimpleNamespace:
    """The job a stage script was started for, from its command line
    (``--rule R --threads T [--attempt N] --log L... -- PARAMS_JSON IO_JSON``, as
    ``rules/common.smk`` writes it: :func:`params`, :func:`io`).

    Raises:
        SystemExit: a malformed command line or job text (argparse's message, or the JSON error).
    """
    ap = argparse.ArgumentParser(prog=Path(sys.argv[0]).name)
    ap.add_argument("--rule", required=True)
    ap.add_argument("--log", nargs="*", default=[])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--attempt", type=int, default=1)
    ap.add_argument("params")
    ap.add_argument("io")
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        doc = {"params": json.loads(a.params), **json.loads(a.io)}
    except json.JSONDecodeError as exc:
        raise SystemExit(f"{ap.prog}: a job argument is not JSON: {exc}") from None
    return SimpleNamespace(
        rule=a.rule,
        input=Items(doc["input"]["values"], doc["input"]["names"]),
        output=Items(doc["output"]["values"], doc["output"]["names"]),
        params=Items(doc["params"].values(), {k: [i, None] for i, k in enumerate(doc["params"])}),
        wildcards=Items(doc["wildcards"].values(), {k: [i, None] for i, k in enumerate(doc["wildcards"])}),
        log=Items(a.log),
        threads=a.threads,
        resources=SimpleNamespace(attempt=a.attempt),
        config=_config(),
    )

