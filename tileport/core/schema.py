"""JSON Schema checks in two passes: a compiled validator says whether a document passes, and
only a document it does not pass is handed to ``jsonschema`` for the errors in words.

Every job validates the verdicts it reads and writes (:func:`tileport.core.verdict.validate`) and
most load a manifest (:func:`tileport.model.manifest.load`). ``import jsonschema`` alone took
0.10-0.16 s of CPU in each job (``python -c "import jsonschema"`` against ``python -c pass``); ``jsonschema_rs``
(jsonschema-rs, Rust) imports in about 0.02 s and builds the manifest schema's validator in about
1 ms. It only decides: a document it passes is valid, and the messages, the strict integer rule
and everything a caller reports still come from ``jsonschema``, which is imported only then.

A pass is taken only where both validators read the document alike (tests/test_schema.py holds
them to agreement); anything else goes to ``jsonschema``:

* types: only what JSON holds as Python ``json`` / YAML load it (``dict`` with ``str`` keys,
  ``list``, ``str``, ``int``, ``bool``, ``float``, None). jsonschema-rs also takes a tuple as an
  array and a ``Decimal`` of integral value as an integer, which ``jsonschema`` does not;
* ``strict_integers`` (the manifest's rule that ``1.0`` is no integer, which JSON Schema's
  ``integer`` takes): each float of integral value is moved to the next float up, then down, and
  the document must pass both ways. The moved float is no integer and stays on the same side of
  every bound, except a bound equal to it, which one of the two moves crosses (a tolerance of
  0.0 with minimum 0 goes to ``jsonschema``). From 2**52 up a float's neighbours are integers
  too, so such a float goes to ``jsonschema``;
* ``ascii_strings``: a string (value or key) with a character outside printable ASCII, tab,
  newline and carriage return. Regular expression classes (``\\S``, ``\\w``, ``\\d``) differ
  between Python's ``re`` and jsonschema-rs's dialect outside ASCII (``\\x1c``-``\\x1f`` and
  ``\\x85`` are whitespace to Python only). jsonschema-rs's ``$`` matches only at the very end where
  Python's also matches before a final newline: jsonschema-rs then rejects, and ``jsonschema``
  decides.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable


class _Undecided(Exception):
    """The document holds something the two validators may read differently."""


def _validator(schema: dict, formats: tuple[tuple[str, Callable[[str], bool]], ...]):
    import jsonschema_rs

    if formats:
        return jsonschema_rs.validator_for(schema, formats=dict(formats), validate_formats=True)
    return jsonschema_rs.validator_for(schema)


# one compiled validator per schema object of this process (the schemas are module constants);
# the schema is held beside it so its id is never reused
_COMPILED: dict[tuple[int, tuple], tuple[dict, object]] = {}
_NOT_PLAIN = re.compile(r"[^\t\n\r\x20-\x7e]")
_EXACT = 2.0**52   # from here up every float is an integer, and so are its neighbours


def _scan(doc, strict_integers: bool, ascii_strings: bool) -> bool:
    """Whether ``doc`` (parsed JSON / YAML) holds a float of integral value that
    ``strict_integers`` must see moved (:func:`_nudged`); read in place, nothing copied. Raises
    _Undecided for what the module doc sends to ``jsonschema``."""
    found, stack = False, [doc]
    while stack:
        x = stack.pop()
        if x is None or isinstance(x, bool | int):
            continue
        if isinstance(x, str):
            if ascii_strings and _NOT_PLAIN.search(x):
                raise _Undecided
        elif isinstance(x, float):
            if strict_integers and x.is_integer():
                if abs(x) >= _EXACT:
                    raise _Undecided
                found = True
        elif isinstance(x, dict):
            for k in x:
                if not isinstance(k, str) or (ascii_strings and _NOT_PLAIN.search(k)):
                    raise _Undecided
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        else:
            raise _Undecided
    return found


def _nudged(doc, toward: float):
    """A copy of ``doc`` with each float of integral value moved to the next float ``toward``
    +inf or -inf (only for a document :func:`_scan` found one in)."""
    if isinstance(doc, float) and doc.is_integer():
        return math.nextafter(doc, toward)
    if isinstance(doc, dict):
        return {k: _nudged(v, toward) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_nudged(v, toward) for v in doc]
    return doc


def passes(schema: dict, doc, formats: dict[str, Callable[[str], bool]] | None = None,
           strict_integers: bool = False, ascii_strings: bool = False) -> bool:
    """Whether ``doc`` is valid against ``schema`` (a JSON Schema as a dict; the draft its
    ``$schema`` names, else 2020-12) by jsonschema-rs, with ``formats`` (format name -> check of a
    string) checked where given and all other formats annotations, as ``jsonschema`` checks them
    without a format checker. ``strict_integers``: a float is no integer; ``ascii_strings``: the
    schema's patterns meet only printable ASCII here (module doc). True: valid. False: not shown
    valid here: ask ``jsonschema``, which words the errors (or finds none). Raises nothing."""
    fmt = tuple(sorted((formats or {}).items()))
    key = (id(schema), fmt)
    try:
        nudge = _scan(doc, strict_integers, ascii_strings)
        held = _COMPILED.get(key)
        if held is None or held[0] is not schema:
            held = _COMPILED[key] = (schema, _validator(schema, fmt))
        check = held[1].is_valid
        return bool(check(doc) and (not nudge or (check(_nudged(doc, math.inf)) and check(_nudged(doc, -math.inf)))))
    except Exception:  # noqa: BLE001 - anything jsonschema-rs cannot take is for jsonschema to judge
        return False
