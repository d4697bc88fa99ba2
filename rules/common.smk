# Helpers shared by all rules: config validation, operator/variant discovery, paths.
import re
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)

from tileport import config as tp_config
from tileport import manifest as tp_manifest
from tileport.constructs import RUST_KEYWORDS as C_RUST_KEYWORDS

# llm: optional (only the LLM backends read it); defaults from tileport.agents.LlmSettings
from tileport.agents import LlmSettings as _LlmSettings, settings_dict as _settings_dict

config.setdefault("llm", {**_settings_dict(_LlmSettings()), "base_url": "", "replay_dir": "results"})
if isinstance(config.get("roles"), dict):  # older config.yaml files have no ir_diagnoser
    config["roles"].setdefault("ir_diagnoser", "deterministic")
    config["roles"].setdefault("perf_diagnoser", "deterministic")
if config.get("gpu") is False:  # unquoted YAML `gpu: off` reads as false
    config["gpu"] = "off"
try:
    tp_config.validate(config, Path(workflow.basedir) / "schemas" / "config.schema.yaml")
except tp_config.ConfigError as exc:
    raise WorkflowError(str(exc))

if config["gpu"] == "required":
    # fail before any job, with the reason on the console (a failing GPU job would only say
    # "non-zero exit status" and delete its verdict)
    from tileport import harness as tp_harness

    try:
        tp_harness.probe_gpu()
    except tp_harness.NoGpu as exc:
        raise WorkflowError(f"config.yaml: gpu: required, but there is no usable GPU here: {exc} "
                            f"(use gpu: auto to run the CPU stages and mark GPU rows not_run)")

OPERATORS_DIR = Path(workflow.basedir) / "operators"


OP_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# folders under operators/ that cannot be an operator (name): reported in summary.csv only
SKIPPED = {}


def _discover_ops():
    found = []
    for p in sorted(OPERATORS_DIR.iterdir()):
        if not p.is_dir() or p.name.startswith(".") or p.name == "__pycache__":
            continue
        if p.name in C_RUST_KEYWORDS:
            SKIPPED[p.name] = (f"{p}: '{p.name}' is a Rust keyword: the shared host library names "
                               f"one module per operator: rename the operator folder: not run")
            print(f"tileport: {SKIPPED[p.name]}", file=sys.stderr)
        elif p.name in ("host", "logs"):
            SKIPPED[p.name] = (f"{p}: '{p.name}' is reserved (results/{p.name}/ holds the shared "
                               f"host library and logs): rename the operator folder: not run")
            print(f"tileport: {SKIPPED[p.name]}", file=sys.stderr)
        elif OP_NAME.match(p.name):
            found.append(p.name)
        else:
            SKIPPED[p.name] = (f"{p}: folder name is not an operator name (lower-case letters, "
                               f"digits and '_', starting with a letter): not run")
            print(f"tileport: {SKIPPED[p.name]}", file=sys.stderr)
    wanted = config["operators"] or found
    missing = [o for o in wanted if o not in found]
    if missing:
        raise WorkflowError(f"config.yaml: key 'operators': {missing} not found under {OPERATORS_DIR} (have {found})")
    return wanted


OPS = _discover_ops()
# op -> list of (kernel, variant id); ops whose folder or manifest is broken get [] and an error
VARIANTS = {}
MANIFEST_ERRORS = {}
for _op in OPS:
    _dir = OPERATORS_DIR / _op
    _lacking = [f for f in ("kernel.py", "manifest.yaml") if not (_dir / f).is_file()]
    try:
        if _lacking:
            raise tp_manifest.ManifestError(f"{_dir}: operator folder lacks {' and '.join(_lacking)}")
        _man = tp_manifest.load(_dir / "manifest.yaml")
        VARIANTS[_op] = [(k, v.id) for k in _man["kernels"] for v in tp_manifest.variants(_man)]
    except tp_manifest.ManifestError as exc:
        VARIANTS[_op] = []
        MANIFEST_ERRORS[_op] = str(exc)
        print(f"tileport: {exc} -- {_op} is reported in summary.csv and skipped", file=sys.stderr)


# operators whose manifest loads: they get shims, GPU stages and a place in the host library
GPU_OPS = [op for op in OPS if op not in MANIFEST_ERRORS]


def op_inputs(wildcards):
    """The operator's own source files (those that exist): every stage of it depends on them."""
    d = OPERATORS_DIR / wildcards.op
    return [str(d / f) for f in ("kernel.py", "manifest.yaml") if (d / f).is_file()]


def op_reference(wildcards):
    """reference.py (the PyTorch semantics) when the operator has one: the GPU stages read it."""
    p = OPERATORS_DIR / wildcards.op / "reference.py"
    return [str(p)] if p.is_file() else []


def writer_ref_ir(wildcards):
    """Reference Tile IR the LLM kernel writer sees (none for the deterministic translator)."""
    if config["roles"]["kernel_writer"] == "translator":
        return []
    v = next((v for k, v in VARIANTS.get(wildcards.op, []) if k == wildcards.kernel), None)
    return [f"results/{wildcards.op}/ref/{wildcards.kernel}/{v}.tileir"] if v else []


def writer_prompt(wildcards):
    if config["roles"]["kernel_writer"] == "translator":
        return []
    return [str(Path(workflow.basedir) / "prompts" / "kernel_writer.md")]


def previous_route(wildcards):
    """Writer attempt n > 1 reads the route of attempt n-1 (its failure and diagnosis)."""
    n = int(wildcards.n)
    if n <= 1:
        return []
    return [f"results/{wildcards.op}/attempts/{wildcards.kernel}/{n - 1}/route.json"]


def routed_attempt(wildcards):
    """Follow the kernel's routes from attempt 1 (checkpoint ``route``): the last route and its
    attempt's files. Until a route exists, Snakemake plans the jobs that make it, so a dry run
    of a half-finished loop lists the next attempt."""
    import json

    cap = config["attempts"]["write_kernel"]
    n = 1
    while True:
        path = checkpoints.route.get(op=wildcards.op, kernel=wildcards.kernel, n=str(n)).output.route
        try:
            nxt = json.loads(Path(path).read_text())["next"]
        except (OSError, ValueError, KeyError, TypeError):
            nxt = "stop"
        if nxt != "retry" or n >= cap:
            a = f"results/{wildcards.op}/attempts/{wildcards.kernel}/{n}"
            return {"route": path, "write": f"{a}/write.json",
                    "rust": f"{a}/rust/src/{wildcards.kernel}.rs"}
        n += 1


def variants_of(op, kernel):
    return [v for k, v in VARIANTS.get(op, []) if k == kernel]


def op_dir(wildcards):
    return str(OPERATORS_DIR / wildcards.op)


def kernels_of(op):
    return sorted({k for k, _ in VARIANTS[op]})


def retries(stage):
    """Snakemake retries for a stage: its attempt cap minus one."""
    return config["attempts"][stage] - 1


def stage_targets(op):
    """Every per-variant verdict the summary of one operator reads."""
    out = [f"results/{op}/analysis.json"]
    if op in MANIFEST_ERRORS:
        return out
    out += [f"results/{op}/write_kernel/{k}.json" for k in kernels_of(op)]
    out.append(f"results/{op}/rust/build.json")
    for k, v in VARIANTS[op]:
        out += [
            f"results/{op}/ref/{k}/{v}.json",
            f"results/{op}/rust_ir/{k}/{v}.json",
            f"results/{op}/ir_diff/{k}/{v}.json",
            f"results/{op}/diagnosis/{k}/{v}.json",
        ]
    out += [f"results/{op}/host/shim.json", f"results/{op}/host/ffi.json", "results/host/build.json",
            "results/host/libtileport_host.so", f"results/{op}/test.json",
            f"results/{op}/bench.json", f"results/{op}/perf_diagnosis.json"]
    return out


def code(*modules):
    """The tileport modules behind a stage, as inputs (editing that logic reruns the stage)."""
    return [str(Path(workflow.basedir) / "tileport" / f"{m}.py") for m in (*modules, "verdict")]
