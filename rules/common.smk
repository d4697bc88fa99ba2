# Helpers shared by all rules: config validation, operator/variant discovery, paths.
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)

from tileport.core import config as tp_config
from tileport.model import manifest as tp_manifest
from tileport.core import source as tp_source
from tileport.core.closure import code_sha
from tileport.core import toolchain as tp_toolchain
from tileport.core import job as tp_job
from tileport.flow import route as tp_route
from tileport.flow import route_files as tp_route_files
from tileport.model.constructs import RUST_KEYWORDS as C_RUST_KEYWORDS
from tileport.nvidia import port as tp_nv


def _profile_files():
    """The Snakemake profiles this run may have read: every profile in the ``profiles/`` folder
    of the workflow (``default`` is merged into every run; site copies live beside it) and
    those named by ``--profile`` / ``$SNAKEMAKE_PROFILE`` (Snakemake hands the workflow no list)."""
    import os

    from snakemake.cli import get_profile_dir

    files = sorted(
        p
        for p in Path(workflow.basedir, "profiles").glob("*/*.yaml")
        if re.fullmatch(r"(profile|config)(\.v[0-9]+[+])?\.yaml", p.name)
    )
    argv, names = sys.argv[1:], [os.environ.get("SNAKEMAKE_PROFILE", "")]
    for i, a in enumerate(argv):
        if a == "--profile":
            names += [x for x in argv[i + 1 : i + 2]]
        elif a.startswith("--profile="):
            names.append(a.split("=", 1)[1])
    for name in filter(None, names):
        try:
            found = get_profile_dir(name)
        except Exception:  # Snakemake itself reports a profile it cannot find
            found = None
        if found:
            files.append(Path(found[1]))
    return files


def check_yaml_inputs():
    """Stop at Snakefile load when a YAML file Snakemake read for this run (config files, profiles)
    repeats a key: Snakemake's loader keeps the last value without a word (a second ``attempts:``
    block or a second ``bench:`` rule under ``set-resources`` would silently replace the first).
    Raises WorkflowError naming each file and both lines (tileport.core.yamlio)."""
    from tileport.core import yamlio

    files = [Path(f) for f in workflow.configfiles] + _profile_files()
    problems = [p for f in dict.fromkeys(f.resolve() for f in files) if (p := yamlio.check_file(f))]
    if problems:
        raise WorkflowError(
            "\n".join(problems) + "\n(remove or rename the repeated key; tileport "
            "never guesses which value was meant)"
        )


check_yaml_inputs()

# llm: optional (only the LLM backends read it); defaults from tileport.core.agents.LlmSettings
from tileport.core.agents import LlmSettings as _LlmSettings, settings_dict as _settings_dict

config.setdefault("llm", {**_settings_dict(_LlmSettings()), "base_url": "", "replay_dir": "results"})
if isinstance(config.get("roles"), dict):  # older config.yaml files have no ir_diagnoser
    config["roles"].setdefault("ir_diagnoser", "deterministic")
    config["roles"].setdefault("perf_diagnoser", "deterministic")
    config["roles"].setdefault("host_builder", "deterministic")
    config["roles"].setdefault("analyser", "deterministic")
if isinstance(config.get("bench"), dict):  # older config.yaml files have no loop timing keys
    from tileport.gpu.bench import DEFAULTS as _BENCH_DEFAULTS

    for _k in ("loop_threshold", "loop_ms", "loop_min_cycles", "loop_max_cycles", "loop_ci_width", "loop_max_s"):
        config["bench"].setdefault(_k, _BENCH_DEFAULTS[_k])
if config.get("gpu") is False:  # unquoted YAML `gpu: off` reads as false
    config["gpu"] = "off"
try:
    tp_config.validate(config, Path(workflow.basedir) / "schemas" / "config.schema.yaml")
except tp_config.ConfigError as exc:
    raise WorkflowError(str(exc))


def canonical_config():
    """Give every config value the one spelling of its meaning before rules read it, so that only
    a change in meaning reruns jobs (Snakemake compares parameters by repr): the schema's key
    order, 20.0 as 20, and each ``tools`` path compared by where it resolves (the default path
    written out is the default, ""); a non-default cargo target dir (a cache) reaches the jobs
    through the environment, never as a parameter (tileport.core.config.resolve_tools)."""
    import os

    from tileport.core import yamlio

    schema = yamlio.load_file(Path(workflow.basedir) / "schemas" / "config.schema.yaml")
    config.update(tp_config.canonical(config, schema))
    config["tools"], env = tp_config.resolve_tools(config.get("tools"), Path.cwd())
    os.environ.update(env)


canonical_config()

if config["gpu"] == "required":
    # fail before any job, with the reason on the console (a failing GPU job would only say
    # "non-zero exit status" and delete its verdict)
    from tileport.gpu import harness as tp_harness

    try:
        tp_harness.probe_gpu()
    except tp_harness.NoGpu as exc:
        raise WorkflowError(
            f"config.yaml: gpu: required, but there is no usable GPU here: {exc} "
            f"(use gpu: auto to run the CPU stages and mark GPU rows not_run)"
        )


# --- stage jobs without Snakemake's script preamble (tileport.core.job) ------------------------
# The per-operator and per-kernel stages (about 1,700 jobs for the whole corpus) run their
# scripts/<stage>.py through shell:, the job handed over as JSON: script: would import Snakemake in
# every job's process first (0.16 s). The jobs find the scripts, the Python to run them with (this
# one; with conda deployment the rule's environment's, first on PATH) and the run's config
# through the environment, so the command (Snakemake's code rerun trigger) names no path.
def _uses_conda():
    from snakemake.settings.types import DeploymentMethod

    return DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


os.environ[tp_job.SCRIPTS_ENV] = str(Path(workflow.basedir) / "scripts")
os.environ[tp_job.PYTHON_ENV] = "python" if _uses_conda() else sys.executable
tp_job.write_config(config, Path(".snakemake") / "tileport")


# A stage rule's parameter ``job``: its values (each a value or a function of the wildcards) as
# JSON, a rerun trigger (tileport.core.job.params)
job_params = tp_job.params

# A stage rule's parameter ``io``: the job's input, output and wildcards as JSON, derived from its
# files and so never a parameter rerun trigger (tileport.core.job.io)
job_io = tp_job.io


def stage_command(script, attempt=True, rule=None):
    """The shell command of a stage: ``scripts/<script>.py`` with the job's JSON, its log, threads
    and (``attempt``: an ``attempt`` resource) Snakemake's attempt number; ``rule`` names it (the
    script's name unless another stage's script runs)."""
    return (
        f'"${tp_job.PYTHON_ENV}" "${tp_job.SCRIPTS_ENV}/{script}.py" --rule {rule or script} --threads {{threads}}'
        + (" --attempt {resources.attempt}" if attempt else "")
        + " --log {log:q} -- {params.job:q} {params.io:q}"
    )


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
            SKIPPED[p.name] = (
                f"{p}: '{p.name}' is a Rust keyword: the shared host library names "
                f"one module per operator: rename the operator folder: not run"
            )
            print(f"tileport: {SKIPPED[p.name]}", file=sys.stderr)
        elif p.name in ("host", "logs", "nvidia"):
            SKIPPED[p.name] = (
                f"{p}: '{p.name}' is reserved (results/{p.name}/ holds the shared "
                f"host library, logs and NVIDIA's shipped ports): rename the operator "
                f"folder: not run"
            )
            print(f"tileport: {SKIPPED[p.name]}", file=sys.stderr)
        elif OP_NAME.match(p.name):
            found.append(p.name)
        else:
            SKIPPED[p.name] = (
                f"{p}: folder name is not an operator name (lower-case letters, "
                f"digits and '_', starting with a letter): not run"
            )
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
    # an operator whose manifest names a wheel's module (source:) has no kernel.py of its own
    _own = () if tp_source.source_of(_dir) is not None else ("kernel.py",)
    _lacking = [f for f in (*_own, "manifest.yaml") if not (_dir / f).is_file()]
    try:
        if _lacking:
            raise tp_manifest.ManifestError(f"{_dir}: operator folder lacks {' and '.join(_lacking)}")
        _man = tp_manifest.load(_dir / "manifest.yaml")
        VARIANTS[_op] = tp_manifest.kernel_variant_ids(_man)
    except tp_manifest.ManifestError as exc:
        VARIANTS[_op] = []
        MANIFEST_ERRORS[_op] = str(exc)
        print(f"tileport: {exc} -- {_op} is reported in summary.csv and skipped", file=sys.stderr)


# operators whose manifest loads: they get shims, GPU stages and a place in the host library
GPU_OPS = [op for op in OPS if op not in MANIFEST_ERRORS]


def op_inputs(wildcards):
    """The operator's source files (those that exist): every stage of it depends on them. An
    operator with ``source:`` reads the imported results/<op>/src/kernel.py (and its import
    verdict) instead of operators/<op>/kernel.py (tileport.core.source.kernel_py)."""
    d = OPERATORS_DIR / wildcards.op
    if tp_source.source_of(d) is not None:
        src = f"results/{wildcards.op}/{tp_source.IMPORT_DIR}"
        return [
            f"{src}/kernel.py",
            f"{src}/kernel.py{tp_source.MAP_SUFFIX}",
            f"{src}/{tp_source.VERDICT_NAME}",
            str(d / "manifest.yaml"),
        ]
    return [str(d / f) for f in ("kernel.py", "manifest.yaml") if (d / f).is_file()]


# cuTile Python sources read from installed wheels (rule import_source)
SOURCES_PIN = str(Path(workflow.basedir) / "requirements-sources.txt")
IMPORTED_OPS = [op for op in OPS if tp_source.source_of(OPERATORS_DIR / op) is not None]


def source_files(wildcards):
    """The installed wheel's files that importing the operator's kernels reads (its module and
    the sibling modules its kept definitions come from, and the FlashInfer-Bench files of its
    manifest's flashinfer_bench key): a new wheel reruns exactly the
    operators whose files changed (Snakemake compares their checksums when a reinstall gives
    them a new mtime)."""
    from tileport.cpu import importer as tp_importer

    from tileport.model import flashinfer as tp_flashinfer

    src = tp_source.source_of(OPERATORS_DIR / wildcards.op) or {}
    kernels = src.get("kernels") or [k for k, _ in VARIANTS.get(wildcards.op, [])]
    # and the FlashInfer-Bench definition / workloads its manifest's shapes and tolerances come from
    return tp_importer.module_files(src.get("module", ""), sorted(set(kernels))) + tp_flashinfer.manifest_files(
        OPERATORS_DIR / wildcards.op
    )


def content_of(*inputs):
    """A parameter: the content hash (tileport.core.source.content_sha) of the operator's own
    files among ``inputs`` (the job's input functions; those under operators/). A file whose
    content changed reruns the job whatever its mtime (issue 33: a kernel.py brought in with an
    older mtime left its verdicts standing)."""

    def param(wildcards):
        files = [f for fn in inputs for f in fn(wildcards) if Path(f).is_relative_to(OPERATORS_DIR)]
        return tp_source.content_sha(tuple(sorted(files)))

    return param


def op_reference(wildcards):
    """reference.py (the PyTorch semantics) when the operator has one: the GPU stages read it."""
    p = OPERATORS_DIR / wildcards.op / "reference.py"
    return [str(p)] if p.is_file() else []


def writer_ref_ir(wildcards):
    """Reference Tile IR the LLM kernel writer sees (none for the deterministic translator)."""
    if config["roles"]["kernel_writer"] == "translator":
        return []
    # the operator's reference Tile IR (a folder per kernel); the writer reads its kernel's first variant's
    return [f"results/{wildcards.op}/ref"] if variants_of(wildcards.op, wildcards.kernel) else []


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
    return d if isinstance(d, dict) else {"next": "stop"}  # unreadable or damaged: a stop


# whether a CPU / GPU route may say retry under config's roles and caps: only then are
# check_kernel / gpu_route checkpoints and their routes followed (rules/route.smk)
ROUTES_MAY_RETRY = tp_route.may_retry_under(config)


def follow_routes(op, kernel, start):
    """The writer attempt the kernel's CPU routes lead to from attempt ``start`` (route.json of
    checkpoint ``check_kernel``): the first that is accepted or stopped. Until a route exists,
    Snakemake plans the jobs that make it, so a dry run of a half-finished loop lists the next
    attempt. Where no CPU route may retry, ``start`` itself (check_kernel is a plain rule)."""
    if not ROUTES_MAY_RETRY["cpu"]:
        return start
    cap = config["attempts"]["write_kernel"]
    n = start
    while True:
        path = checkpoints.check_kernel.get(op=op, kernel=kernel, n=str(n)).output.route
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
    ok = (
        isinstance(req, dict)
        and type(req.get("attempt")) is int
        and req["attempt"] >= 2
        and (
            (
                req.get("role") == "kernel_writer"
                and req.get("kernel") in kernels_of(op)
                and req["attempt"] <= config["attempts"]["write_kernel"]
            )
            or (req.get("role") == "host_builder" and req["attempt"] <= config["attempts"]["host_shim"])
        )
    )
    return d if ok else {**d, "next": "stop", "request": None}


def gpu_routes(op):
    """The operator's GPU routes from round 1 (checkpoint ``gpu_route``) up to the first that
    does not say retry: [(round, route dict)]. Where no GPU route may retry, round 1 alone, its
    route not read (gpu_route is a plain rule)."""
    if not ROUTES_MAY_RETRY["gpu"]:
        return [(1, {})]
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
    if not ROUTES_MAY_RETRY["gpu"]:
        return att
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
    if not ROUTES_MAY_RETRY["cpu"]:
        # no route asks for attempt n here; one named as a target reads attempt n-1's route
        return [f"results/{wildcards.op}/attempts/{wildcards.kernel}/{n - 1}/route.json"]
    prev = checkpoints.check_kernel.get(op=wildcards.op, kernel=wildcards.kernel, n=str(n - 1)).output.route
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
    return {
        "test": f"{root}/{op}/test.json",
        "bench": f"{root}/{op}/bench.json",
        "perf": f"{root}/{op}/perf_diagnosis.json",
        "shim": f"{root}/{op}/host/shim.json",
        "kernels": [f"{root}/{op}/write_kernel/{k}.json" for k in kernels_of(op)],
        # one folder per kernel, a verdict per variant inside (one job per kernel: issue 32)
        "ir_diffs": [f"{root}/{op}/ir_diff/{k}" for k in kernels_of(op)],
        "diagnoses": [f"{root}/{op}/diagnosis/{k}" for k in kernels_of(op)],
    }


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
    # the per-variant stages: one folder per kernel (its job handles every variant), a verdict
    # per variant inside (<variant>.json)
    out.append(f"results/{op}/ref")
    for k in kernels_of(op):
        out += [
            f"{root}/{op}/rust_ir/{k}",
            f"{root}/{op}/ir_diff/{k}",
            f"{root}/{op}/diagnosis/{k}",
        ]
    out += [
        f"{root}/{op}/host/shim.json",
        f"{root}/{op}/host/ffi.json",
        f"{root}/host/build.json",
        f"{root}/host/libtileport_host.so",
        f"{root}/{op}/test.json",
        f"{root}/{op}/bench.json",
        f"{root}/{op}/perf_diagnosis.json",
    ]
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
    return {
        "verdicts": [ancient(t) if t in shared else t for t in stage_targets(wildcards.op, root)],
        "routes": [f"results/{wildcards.op}/rounds/{r}/route.json" for r, _ in taken],
    }


def summary_inputs(wildcards):
    """What summary.csv reads: each operator's final round (or, for a broken manifest, its analysis) and
    each kernel's run-time Tile IR / SASS verdict (rule runtime_ir)."""
    check_route_files()
    return (
        [
            t
            for op in OPS
            for t in (stage_targets(op) if op in MANIFEST_ERRORS else [f"results/{op}/final.json"] + nv_targets(op))
        ]
        + [f"results/{op}/runtime" for op in OPS if op not in MANIFEST_ERRORS and kernels_of(op)]
        + (["results/host/build.json"] if GPU_OPS else [])
    )


def code(script, *modules):
    """A rule's code parameter: the content hash of every tileport file its ``scripts/<script>.py``
    runs -- the import closure of the modules the script imports, and of ``modules`` (dotted names
    under tileport/ that the script picks at run time by name) -- so that editing a module reruns
    exactly the rules whose jobs import it (tileport.core.closure.code_sha). A parameter, not
    inputs: the scheduler would stat the ~30 files of every job at each selection."""
    base = Path(workflow.basedir)
    return code_sha(base / "scripts" / f"{script}.py", base / "tileport", tuple(f"tileport.{m}" for m in modules))


# --- GPU requests on a cluster ------------------------------------------------------------------
# The GPU rules ask for gpu=1, which Snakemake's SLURM executor turns into `sbatch --gpus=1`. A
# site that accepts only --gres sets `gres: "gpu:<type>:1"` for these rules in its profile; the
# executor would then pass both --gres and --gpus (plugin 2.8.0 `set_gres_string`), and such a
# site rejects the job. So a GPU rule whose profile names a GPU in `gres` asks for gpu=0.
GPU_RULES = ("gpu_test", "bench")


def _gres_names_gpu(gres):
    """Whether a Slurm GRES request (``gpu``, ``gpu:2``, ``gpu:h200:1``, comma-separated) names a GPU."""
    return any(part.strip().split(":")[0] == "gpu" for part in str(gres or "").split(","))


def _set_resources(name):
    """{resource: value} the profile or --set-resources gives the rule called ``name``."""
    res = workflow.resource_settings.overwrite_resources.get(name) or {}
    out = {}
    for name, value in dict(res).items():
        raw = getattr(value, "raw", value)  # a snakemake Resource (text as given) or a value
        out[name] = raw
    return out


def gpu_count(name):
    """The ``gpu`` resource of the GPU rule called ``name`` (1), or 0 where the profile gives that
    rule a ``gres`` naming the GPU (then sbatch gets --gres alone)."""
    return 0 if _gres_names_gpu(_set_resources(name).get("gres")) else 1


def check_gpu_requests():
    """Stop at load when a profile asks for a GPU rule's GPU twice: ``gres`` naming a GPU together
    with ``gpu`` > 0 or ``gpu_model`` (sbatch would get both --gres and --gpus)."""
    problems = []
    for name in GPU_RULES:
        res = _set_resources(name)
        if not _gres_names_gpu(res.get("gres")):
            continue
        both = [f"{k} {res[k]!r}" for k in ("gpu", "gpu_model") if res.get(k) not in (None, 0, "0", "")]
        if both:
            problems.append(
                f"set-resources: {name}: gres {res['gres']!r} and {' and '.join(both)} "
                f"would both reach sbatch (--gres and --gpus)"
            )
    if problems:
        raise WorkflowError(
            "\n".join(problems) + "\n(keep gres alone: tileport then drops the GPU rules' own gpu=1; or drop gres)"
        )


check_gpu_requests()


# --- names in profiles -------------------------------------------------------------------------
def check_profile_rule_names():
    """Stop at load when ``set-resources`` or ``set-threads`` (a profile or the command line)
    names no rule of this workflow (Snakemake ignores such an entry without a word), so a misspelt
    ``bnech:`` would leave the benchmark on the default resources. Called at the end of the
    Snakefile, once every rule is defined."""
    rules = {r.name for r in workflow.rules}
    settings = workflow.resource_settings
    problems = [
        f"{what}: {sorted(unknown)} name no rule of this workflow"
        for what, given in (
            ("set-resources", settings.overwrite_resources),
            ("set-threads", settings.overwrite_threads),
        )
        if (unknown := set(given or {}) - rules)
    ]
    if problems:
        raise WorkflowError("\n".join(problems) + f"\n(rules: {', '.join(sorted(rules))})")


# --- deleted routing records ---------------------------------------------------------------------
_CHECKED_GONE = []


def check_route_files():
    """Warn when operators summary.csv lists have lost their results (route_files.deleted_operators).
    Stop a run that reads the routes (the summary's DAG) when a route a later file proves was
    made (tileport.flow.route_files) is missing: Snakemake would not rebuild it (a deleted intermediate
    file whose followers are up to date is not noticed, a checkpoint's output not even looked
    for) and summary.csv would show an empty gpu_route. ``make run`` rebuilds them first; routes
    named as targets of this run are being rebuilt and pass."""
    import os

    from tileport.flow import route_files

    targets = {os.path.normpath(t) for t in workflow.dag_settings.targets}
    if not _CHECKED_GONE:
        # once per run (Snakemake asks for the summary's inputs again after checkpoints): a
        # warning, not a stop, since where something else makes the summary rerun (a config or
        # code change) Snakemake does build them
        _CHECKED_GONE.append(True)
        gone = [
            op
            for op in route_files.deleted_operators("results")
            if op in OPS and op not in MANIFEST_ERRORS and os.path.normpath(f"results/{op}/final.json") not in targets
        ]
        if gone:
            finals = " ".join(f"results/{op}/final.json" for op in gone)
            print(
                f"tileport: the results of {', '.join(gone)} are gone although results/summary.csv "
                f"lists them; Snakemake may report nothing to be done (each way to them passes a "
                f"routing record that is gone too, snakemake/snakemake#3879). Build them as "
                f"targets (make run does):\n  .venv/bin/snakemake --cores all {finals}",
                file=sys.stderr,
            )
    missing = [(r, e) for r, e in route_files.missing_routes("results") if os.path.normpath(r) not in targets]
    if missing:
        files = "\n".join(f"  {r} (needed by {e})" for r, e in missing)
        routes = " ".join(r for r, _ in missing)
        raise WorkflowError(
            f"routing records missing (deleted?) although files made from them exist:\n{files}\n"
            f"Snakemake does not rebuild them by itself. Rebuild them alone (nothing after them "
            f"reruns unless one comes out different) with:\n"
            f"  .venv/bin/snakemake --cores all {routes} {rebuild_routes_only()}\n"
            f"then run again (make run does both)."
        )


# only the routing rules may run when rebuilding routes where they are checkpoints: a needrun job
# passes its rerun to every job after it in the same DAG (a route's followers, through the shared
# host library the other operators' too), while a later run compares the rebuilt route by
# checksum; as plain rules every rule but a route's followers (route_files.rebuild_args)
def rebuild_routes_only():
    """The Snakemake arguments that rebuild missing routes alone (route_files.rebuild_args)."""
    return " ".join(tp_route_files.rebuild_args(ROUTES_MAY_RETRY, [r.name for r in workflow.rules]))


# NVIDIA's shipped cuTile Rust ports (rules/nv_port.smk): the operators that import a TileGym
# kernel NVIDIA ported (manifest source: + rust/nvidia/ports.yaml)
try:
    NV_PORTS = tp_nv.load_ports()
except tp_nv.NvPortError as exc:
    raise WorkflowError(str(exc))

# op -> {kernel: (NVIDIA op, entry)}
NV_LINKS = {op: l for op in GPU_OPS for l in [tp_nv.links(OPERATORS_DIR / op / "manifest.yaml", NV_PORTS)] if l}


def nv_variants(op):
    """(kernel, variant) pairs of ``op`` whose kernel NVIDIA ported."""
    return [(k, v) for k, v in VARIANTS.get(op, []) if k in NV_LINKS.get(op, {})]


def nv_targets(op):
    """The NVIDIA verdicts summary.csv reads for one operator ([] when NVIDIA ported none of its kernels)."""
    if op not in NV_LINKS:
        return []
    return ["results/nvidia/shipped/build.json", "results/nvidia/tileport/build.json"] + [
        f"results/{op}/nv_ir_diff/{k}" for k in sorted({k for k, _ in nv_variants(op)})
    ]


def nv_gpu_inputs(wildcards):
    """NVIDIA's built library for the GPU stages of an operator with ported kernels (ancient: a
    rebuild does not rerun a measurement; the stages read the library the verdict names)."""
    return [ancient("results/nvidia/shipped/build.json")] if wildcards.op in NV_LINKS else []
