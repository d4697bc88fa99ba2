"""``config.yaml``: validation against ``schemas/config.schema.yaml``, one spelling per meaning
for the values that become job parameters, and where its ``tools`` paths resolve."""
from __future__ import annotations

import os
from pathlib import Path

import jsonschema

from tileport.core import toolchain, yamlio


class ConfigError(ValueError):
    """config.yaml is invalid; the message names the key, the value and what was expected."""


def validate(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` (a dict) against the YAML JSON-schema at ``schema_path``.

    Raises:
        ConfigError: e.g. ``config.yaml: key 'gpu_target': value 'hopper' -- expected a string
            matching '^sm_[0-9]{2,3}[a-z]?$'``.
    """
    schema = yamlio.load_file(schema_path)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(config),
                    key=lambda e: list(e.absolute_path))
    if not errors:
        return config
    lines = []
    for e in errors:
        key = "/".join(str(p) for p in e.absolute_path) or "<root>"
        if e.validator == "additionalProperties":
            extra = sorted(set(e.instance) - set(e.schema.get("properties", {})))
            lines.append(f"config.yaml: unknown key(s) {extra} under '{key}' -- expected one of "
                         f"{sorted(e.schema.get('properties', {}))}")
            continue
        expected = {
            "enum": lambda: f"one of {e.validator_value}",
            "pattern": lambda: f"a string matching '{e.validator_value}'",
            "type": lambda: f"type {e.validator_value}",
            "minimum": lambda: f">= {e.validator_value}",
            "maximum": lambda: f"<= {e.validator_value}",
            "required": lambda: f"the missing key(s) {sorted(set(e.validator_value) - set(e.instance))}",
        }.get(e.validator, lambda: e.message)()
        if e.validator == "required":
            lines.append(f"config.yaml: key '{key}' lacks {expected.split(' ', 1)[1]}")
            continue
        lines.append(f"config.yaml: key '{key}': value {e.instance!r} -- expected {expected}")
    raise ConfigError("\n".join(lines))


# config.yaml ``tools`` key -> the environment variable a job's tileport reads it from
# (tileport.core.stage.apply_tools exports the non-empty ones)
TOOL_ENV = {"tileirdisasm": "TILEPORT_TILEIRDISASM", "cuda_root": "TILEPORT_CUDA_ROOT",
            "cargo_target_dir": "TILEPORT_CARGO_TARGET_DIR"}
# tools whose location cannot change a result: a cache (each build checks the hash of the
# sources its binary was built from). Never a job parameter, so moving it reruns nothing.
CACHE_TOOLS = ("cargo_target_dir",)


def canonical(value, schema: dict | None = None):
    """One spelling per meaning, for values that reach Snakemake as job parameters.

    Snakemake decides that a job's parameters changed by comparing ``repr()`` of each (Snakemake
    9.27, ``persistence._serialize_param_builtin``), so ``20`` and ``20.0``, or one mapping with its
    keys in another order, would rerun every job that takes it. Mappings get the key order of the
    schema's ``properties`` (for ``bench`` and ``tools``, the mappings rules take whole, the order
    of the shipped config.yaml, whose parameters so keep their repr), then any other keys sorted;
    a float with an integral value (``20.0``, which JSON Schema counts as an integer) becomes an
    int. Lists keep their order.

    Args:
        value: a config value (dict, list, scalar), e.g. the whole validated config.
        schema: the JSON schema of ``value`` (the part of config.schema.yaml that describes it).

    Returns:
        A new value; ``value`` is not modified.
    """
    schema = schema if isinstance(schema, dict) else {}
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        order = [k for k in props if k in value] + sorted((k for k in value if k not in props), key=str)
        return {k: canonical(value[k], props.get(k, extra)) for k in order}
    if isinstance(value, list):
        return [canonical(v, schema.get("items")) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def tool_defaults() -> dict:
    """The path each ``tools`` entry resolves to when config.yaml leaves it empty (its
    environment variable, else the PyPI wheels of this interpreter, else the shared cache):
    {key: Path or None when it cannot be found here}."""
    found = {}
    for key, get in (("tileirdisasm", lambda: toolchain.tool("tileirdisasm")),
                     ("cuda_root", toolchain.cuda_root),
                     ("cargo_target_dir", toolchain.default_target_dir)):
        try:
            found[key] = Path(get())
        except (FileNotFoundError, OSError):
            found[key] = None
    return found


def resolve_path(value: str, workdir: str | Path) -> Path:
    """Where a path written in config.yaml points: ``~`` expanded, relative to ``workdir`` (the
    directory Snakemake runs in), symbolic links followed (the path need not exist)."""
    p = Path(value).expanduser()
    return Path(os.path.realpath(p if p.is_absolute() else Path(workdir) / p))


def resolve_tools(tools: dict, workdir: str | Path, defaults: dict | None = None) -> tuple[dict, dict]:
    """Split config.yaml's ``tools`` into job parameters and environment.

    A path that resolves (:func:`resolve_path`) to the same place as its default is the default:
    its parameter is ``""``, as if it were left empty, so writing out the default path, or
    spelling a path another way (relative, ``~``, through a symbolic link), reruns nothing. Any
    other path is passed on resolved (absolute). Cache locations (:data:`CACHE_TOOLS`) are never
    parameters: a non-default one is returned in the environment instead.

    Args:
        tools: the ``tools`` mapping of config.yaml (keys of :data:`TOOL_ENV`, values path strings).
        workdir: the directory relative paths are relative to.
        defaults: :func:`tool_defaults` (computed when None).

    Returns:
        (params, env): ``params`` has every key of :data:`TOOL_ENV` in its order, values ``""``
        or an absolute path; ``env`` maps environment variable -> absolute path for the cache
        tools set to a non-default place.
    """
    defaults = tool_defaults() if defaults is None else defaults
    params, env = {}, {}
    for key, var in TOOL_ENV.items():
        value = (tools or {}).get(key) or ""
        path = resolve_path(value, workdir) if value else None
        default = defaults.get(key)
        if path is not None and default is not None and path == Path(os.path.realpath(default)):
            path = None
        if key in CACHE_TOOLS:
            params[key] = ""
            if path is not None:
                env[var] = str(path)
        else:
            params[key] = str(path) if path is not None else ""
    return params, env
