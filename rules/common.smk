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
    config["roles"].setdefault("host_builder", "deterministic")
    config["roles"].setdefault("analyser", "deterministic")
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


def _route_next(path):
    import json

    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {"next": "stop"}
    return d if isinstance(d, dict) else {"next": "stop"}     # unreadable or damaged: a stop


def follow_routes(op, kernel, start):
    """The writer attempt the kernel's CPU routes lead to from attempt ``start`` (checkpoint
    ``route``): the first that is accepted or stopped. Until a route exists, Snakemake plans the
    jobs that make it, so a dry run of a half-finished loop lists the next attempt."""
    cap = config["attempts"]["write_kernel"]
    n = start
    while True:
        path = checkpoints.route.get(op=op, kernel=kernel, n=str(n)).output.route
        if _route_next(path).get("next") != "retry" or n >= cap:
            return n
        n += 1


def max_rounds(op):
    """Each GPU round after the first costs one kernel-writer or host-builder attempt: a bound,
    not a target."""
    return 1 + max(1, len(kernels_of(op))) * config["attempts"]["write_kernel"] + config["attempts"]["host_shim"]


def round_root(op, r):
    """The results tree of GPU round ``r`` of ``op``: results/ for round 1, else its own."""
    return "results" if int(r) == 1 else f"results/{op}/rounds/{r}"


def root_round(root):
    """Inverse of round_root: the round number of a stage's ``{root}``."""
    return 1 if root == "results" else int(root.rsplit("/", 1)[1])


def root_ops(root):
    """Operators built into the host library under ``{root}``."""
    return GPU_OPS if root == "results" else [root.split("/")[1]]


def _gpu_route_next(op, path):
    """A GPU route as the DAG may follow it: a retry whose ``request`` is not one tileport writes
    (role, a kernel of the operator, an int attempt in 2..cap) is followed as a stop, so a
    hand-edited or damaged route.json cannot send the DAG to a nonexistent or cyclic attempt
    (gpu_route names the problem when it rewrites the file)."""
    d = _route_next(path)
    if d.get("next") != "retry":
        return d
    req = d.get("request")
    ok = isinstance(req, dict) and type(req.get("attempt")) is int and req["attempt"] >= 2 and (
        (req.get("role") == "kernel_writer" and req.get("kernel") in kernels_of(op)
         and req["attempt"] <= config["attempts"]["write_kernel"])
        or (req.get("role") == "host_builder" and req["attempt"] <= config["attempts"]["host_shim"]))
    return d if ok else {**d, "next": "stop", "request": None}


def gpu_routes(op):
    """The operator's GPU routes from round 1 (checkpoint ``gpu_route``) up to the first that
    does not say retry: [(round, route dict)]."""
    out, r = [], 1
    while True:
        path = checkpoints.gpu_route.get(op=op, r=str(r)).output.route
        d = _gpu_route_next(op, path)
        out.append((r, d))
        if d.get("next") != "retry" or r >= max_rounds(op):
            return out
        r += 1


def round_attempts(op, r):
    """{kernel: writer attempt} that GPU round ``r`` tests: round 1 follows each kernel's CPU
    routes from attempt 1; a retry of round r-1 restarts one kernel's loop at the attempt it
    asked for."""
    att = {k: follow_routes(op, k, 1) for k in kernels_of(op)}
    for rr in range(1, int(r)):
        path = checkpoints.gpu_route.get(op=op, r=str(rr)).output.route
        req = _gpu_route_next(op, path).get("request") or {}
        if req.get("kernel") in att:
            att[req["kernel"]] = follow_routes(op, req["kernel"], req["attempt"])
    return att


def previous_route(wildcards):
    """Writer attempt n > 1 reads the route of attempt n-1 (its failure and diagnosis); when that
    route accepted attempt n-1, attempt n was asked for by a GPU round's route (a functional
    failure or a slow port), which it reads too."""
    n = int(wildcards.n)
    if n <= 1:
        return []
    prev = checkpoints.route.get(op=wildcards.op, kernel=wildcards.kernel, n=str(n - 1)).output.route
    if _route_next(prev).get("next") != "accept":
        return [prev]
    # rounds in order, up to the one that asked (a later round would depend on this attempt)
    for r in range(1, max_rounds(wildcards.op) + 1):
        path = checkpoints.gpu_route.get(op=wildcards.op, r=str(r)).output.route
        d = _gpu_route_next(wildcards.op, path)
        req = d.get("request") or {}
        if req.get("kernel") == wildcards.kernel and req.get("attempt") == n:
            return [prev, path]
        if d.get("next") != "retry":
            break
    return [prev]


def attempt_files(op, kernel, n):
    """The files of writer attempt ``n`` that accept_kernel / round_kernel publish."""
    a = f"results/{op}/attempts/{kernel}/{n}"
    return {"route": f"{a}/route.json", "write": f"{a}/write.json", "rust": f"{a}/rust/src/{kernel}.rs"}


def routed_attempt(wildcards):
    """Round 1's attempt of a kernel, for accept_kernel: its last route and attempt files."""
    return attempt_files(wildcards.op, wildcards.kernel, follow_routes(wildcards.op, wildcards.kernel, 1))


def round_attempt(wildcards):
    """The attempt of one kernel that GPU round r >= 2 tests (rule round_kernel)."""
    return attempt_files(wildcards.op, wildcards.kernel, round_attempts(wildcards.op, wildcards.r)[wildcards.kernel])


def round_inputs(wildcards):
    """What checkpoint gpu_route of round r reads: that round's GPU verdicts and kernels."""
    root, op = round_root(wildcards.op, wildcards.r), wildcards.op
    return {"test": f"{root}/{op}/test.json", "bench": f"{root}/{op}/bench.json",
            "perf": f"{root}/{op}/perf_diagnosis.json", "shim": f"{root}/{op}/host/shim.json",
            "kernels": [f"{root}/{op}/write_kernel/{k}.json" for k in kernels_of(op)],
            "ir_diffs": [f"{root}/{op}/ir_diff/{k}/{v}.json" for k, v in VARIANTS[op]],
            "diagnoses": [f"{root}/{op}/diagnosis/{k}/{v}.json" for k, v in VARIANTS[op]]}


def variants_of(op, kernel):
    return [v for k, v in VARIANTS.get(op, []) if k == kernel]


def op_dir(wildcards):
    return str(OPERATORS_DIR / wildcards.op)


def kernels_of(op):
    return sorted({k for k, _ in VARIANTS[op]})


def retries(stage):
    """Snakemake retries for a stage: its attempt cap minus one."""
    return config["attempts"][stage] - 1


def stage_targets(op, root="results"):
    """Every per-variant verdict the summary of one operator reads, under ``root`` (results/ or
    a GPU round's tree; analysis and reference Tile IR are always results/'s)."""
    out = [f"results/{op}/analysis.json"]
    if op in MANIFEST_ERRORS:
        return out
    out += [f"{root}/{op}/write_kernel/{k}.json" for k in kernels_of(op)]
    out.append(f"{root}/{op}/rust/build.json")
    for k, v in VARIANTS[op]:
        out += [
            f"results/{op}/ref/{k}/{v}.json",
            f"{root}/{op}/rust_ir/{k}/{v}.json",
            f"{root}/{op}/ir_diff/{k}/{v}.json",
            f"{root}/{op}/diagnosis/{k}/{v}.json",
        ]
    out += [f"{root}/{op}/host/shim.json", f"{root}/{op}/host/ffi.json", f"{root}/host/build.json",
            f"{root}/host/libtileport_host.so", f"{root}/{op}/test.json",
            f"{root}/{op}/bench.json", f"{root}/{op}/perf_diagnosis.json"]
    return out


def final_inputs(wildcards):
    """One operator's verdicts in its last GPU round's tree, plus every GPU route it took
    (rule final_round; one such rule per operator lets Snakemake follow each operator's
    checkpoints independently, and in parallel)."""
    taken = gpu_routes(wildcards.op)
    root = round_root(wildcards.op, taken[-1][0])
    # the shared library (round 1) is rebuilt whenever any operator changes: only its existence
    # matters here (summary reads it itself), so one operator's edit reruns no other's final_round
    shared = {f"{root}/host/build.json", f"{root}/host/libtileport_host.so"}
    return {"verdicts": [ancient(t) if t in shared else t for t in stage_targets(wildcards.op, root)],
            "routes": [f"results/{wildcards.op}/rounds/{r}/route.json" for r, _ in taken]}


def summary_inputs(wildcards):
    """What summary.csv reads: each operator's final round (or, for a broken manifest, its analysis)."""
    return [t for op in OPS for t in (stage_targets(op) if op in MANIFEST_ERRORS
                                      else [f"results/{op}/final.json"])] + (
        ["results/host/build.json"] if GPU_OPS else [])


def code(*modules):
    """The tileport modules behind a stage, as inputs (editing that logic reruns the stage): a
    module's file, or every file of a package (a folder under tileport/)."""
    base = Path(workflow.basedir) / "tileport"
    return [str(p) for m in (*modules, "verdict")
            for p in (sorted((base / m).glob("*.py")) if (base / m).is_dir() else [base / f"{m}.py"])]
