"""JSON Schema checks in two passes: a compiled validator says whether a document passes, and
only a document it does not pass is handed to ``jsonschema`` for the errors in words.

Every job validates the verdicts it reads and writes (:func:`tileport.core.verdict.validate`) and
most load a manifest (:func:`tileport.model.manifest.load`). ``import jsonschema`` alone took
0.10-0.16 s of CPU in each job (``python -c "import jsonschema"`` against ``python -c pass``); ``jsonschema_rs``
(jsonschema-rs, Rust) imports in about 0.02 s and builds the manifest schema's validator in about
1 ms. It only decides: a document it passes is valid, and the messages, the strict integer rule
and everything a caller reports still come from ``jsonschema``, which is imported only then.

A pass is taken only where both validators must agree (tests/test_schema.py holds them to it):
``jsonschema_rs`` raises on what JSON cannot hold (a mapping key that is no string, ...): no
pass; ``strict_integers`` (the manifest's rule that ``1.0`` is no integer, which JSON Schema's
``integer`` admits): a document holding a float of integral value passes only if it also passes
with each such float moved to the next float up, and to the next float down (not an integer,
and on the same side of every bound but one equal to it, which one of the two then fails, so a
float on a bound, a tolerance of 0.0, is left to ``jsonschema``); regular
expressions: jsonschema-rs's dialect matches ``$`` only at the very end and ``\\d`` / ``\\w`` in
ASCII only, so where it differs from Python's ``re`` it rejects what Python accepts, never the
reverse, and the rejected document goes to ``jsonschema``.
"""
from __future__ import annotations

import math
from collections.abc import Callable


def _validator(schema: dict, formats: tuple[tuple[str, Callable[[str], bool]], ...]):
    import jsonschema_rs

    if formats:
        return jsonschema_rs.validator_for(schema, formats=dict(formats), validate_formats=True)
    return jsonschema_rs.validator_for(schema)


# one compiled validator per schema object of this process (the schemas are module constants);
# the schema is held beside it so its id is never reused
_COMPILED: dict[tuple[int, tuple], tuple[dict, object]] = {}


def _nudged(doc, toward: float):
    """``doc`` (parsed JSON / YAML) with every float of integral value moved to the next float
    ``toward`` +inf or -inf; None when it holds none."""
    found = False

    def walk(x):
        nonlocal found
        if isinstance(x, float) and x.is_integer():
            found = True
            return math.nextafter(x, toward)
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [walk(v) for v in x]
        return x

    out = walk(doc)
    return out if found else None


def passes(schema: dict, doc, formats: dict[str, Callable[[str], bool]] | None = None,
           strict_integers: bool = False) -> bool:
    """Whether ``doc`` is valid against ``schema`` (a JSON Schema as a dict; the draft its
    ``$schema`` names, else 2020-12) by jsonschema-rs, with ``formats`` (format name -> check of a
    string) checked where given and all other formats annotations, as ``jsonschema`` checks them
    without a format checker. True: valid. False: not shown valid here: ask ``jsonschema``, which
    words the errors (or finds none, where the two differ: see the module doc). Raises nothing."""
    fmt = tuple(sorted((formats or {}).items()))
    key = (id(schema), fmt)
    try:
        held = _COMPILED.get(key)
        if held is None or held[0] is not schema:
            held = _COMPILED[key] = (schema, _validator(schema, fmt))
        if not held[1].is_valid(doc):
            return False
        if strict_integers:
            # an integral float (1.0) is no integer here, though JSON Schema's "integer" takes it:
            # moved to the next float above and below, it fails every "integer" and keeps every
            # bound, "number" and non-integer form it met, so it passes both ways only where the
            # strict rule passes it
            up = _nudged(doc, math.inf)
            if up is not None and not (held[1].is_valid(up) and held[1].is_valid(_nudged(doc, -math.inf))):
                return False
        return True
    except Exception:  # noqa: BLE001 - anything jsonschema-rs cannot take is for jsonschema to judge
        return False
