"""Validation of ``config.yaml`` against ``schemas/config.schema.yaml``."""
from __future__ import annotations

import os
from pathlib import Path

import jsonschema

from . import yamlio


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
