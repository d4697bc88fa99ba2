"""tileport.core.schema: a document jsonschema-rs passes is one jsonschema finds no error in.

The fast pass decides for every verdict and manifest a job reads, so it must never pass what the
words-giving validator rejects: checked on every committed manifest and verdict, and on many
random one-leaf edits of them (wrong types, integral floats, extra keys, names, patterns)."""
import copy
import json
import random
from pathlib import Path

import pytest

from tileport.core import schema as tp_schema
from tileport.core import yamlio
from tileport.core.verdict import VERDICT_SCHEMA, VerdictError, validate
from tileport.model import manifest as tp_manifest

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = sorted((ROOT / "operators").glob("*/manifest.yaml"))
VERDICTS = sorted(p for p in (ROOT / "docs" / "results").rglob("*.json")
                  if p.name in ("test.json", "bench.json", "perf_diagnosis.json"))[:60]

# what a one-leaf edit may put in: every JSON type, integral and other floats, names that are
# and are not Python identifiers, strings a pattern's '$' or '\d' treats differently by dialect
REPLACEMENTS = [None, True, False, 0, 1, -1, 16, 2**70, 1.0, 16.0, 0.5, -2.5, 1e20, 2.0**53, -1e17, "", "x",
                "f16", "bf16", "1abc", "a b", "ab\n", "é", "١٢", "\x1f", "\x1c\x1d", "\x85", "\ufeff", "sm_90",
                "PASS", [], [1], ["x"], (), (1,), {}, {"x": 1}]


def manifest_doc(p: Path):
    """The manifest at ``p`` as manifest.load validates it (a FlashInfer-Bench one filled in)."""
    text = p.read_text()
    doc = yamlio.load(text, p)
    tp_manifest._flashinfer_bench(doc, p, text)
    return doc


def manifest_errors(doc) -> list:
    return list(tp_manifest._strict_validator().iter_errors(doc))


def manifest_passes(doc) -> bool:
    return tp_schema.passes(tp_manifest.MANIFEST_SCHEMA, doc, formats=tp_manifest._FORMATS,
                            strict_integers=True, ascii_strings=True)


def verdict_errors(doc) -> bool:
    try:
        validate(doc)
    except VerdictError:
        return True
    return False


def leaves(doc, path=()):
    """Every (path, value) of ``doc``, containers included."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from leaves(v, (*path, i))


def edited(doc, path, value):
    out = copy.deepcopy(doc)
    if not path:
        return value
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def edits(doc, rng, n):
    """``n`` one-leaf edits of ``doc``: a value replaced, or a key added to a mapping."""
    spots = list(leaves(doc))
    for _ in range(n):
        path, value = rng.choice(spots)
        if isinstance(value, dict) and rng.random() < 0.3:
            yield edited(doc, path, {**value, rng.choice(["x", "dtype", "1k", "shape"]): rng.choice(REPLACEMENTS)})
        else:
            yield edited(doc, path, rng.choice(REPLACEMENTS))


def test_every_committed_manifest_passes_fast_and_is_valid():
    assert len(MANIFESTS) > 50
    slow = []
    for p in MANIFESTS:
        doc = manifest_doc(p)
        assert not manifest_errors(doc), p
        if not manifest_passes(doc):
            slow.append(p.parent.name)
    # the slow path is left to manifests with an integral float on a bound (a tolerance of 0.0:
    # the next float down breaks its minimum); nine in ten take the fast one
    assert all(tp_schema._scan(manifest_doc(ROOT / "operators" / op / "manifest.yaml"), True, True)
               for op in slow), slow
    assert len(slow) <= len(MANIFESTS) // 10, slow


@pytest.mark.parametrize("seed", range(4))
def test_a_manifest_jsonschema_rs_passes_has_no_jsonschema_error(seed):
    rng = random.Random(seed)
    checked = rejected = 0
    for p in rng.sample(MANIFESTS, 12):
        doc = manifest_doc(p)
        for d in edits(doc, rng, 60):
            errs = manifest_errors(d)
            if manifest_passes(d):
                checked += 1
                assert not errs, (p, [e.message for e in errs][:3])
            elif errs:
                rejected += 1
    # the edits reach both sides: many still pass, many break the schema
    assert checked > 25 and rejected > 50, (checked, rejected)


def test_manifest_errors_keep_their_words_for_what_only_the_strict_rule_rejects(tmp_path):
    # ndim 1.0: JSON Schema's integer takes it, jsonschema-rs passes it; the strict rule must not
    doc = manifest_doc(ROOT / "operators" / "relu" / "manifest.yaml")
    doc["kernels"]["relu_kernel"]["arrays"]["x"]["ndim"] = 1.0
    assert not manifest_passes(doc)
    assert manifest_errors(doc)


def test_an_integral_float_is_no_integer_and_keeps_its_bounds():
    integer = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert tp_schema.passes(integer, {"n": 1}, strict_integers=True)
    assert not tp_schema.passes(integer, {"n": 1.0}, strict_integers=True)
    assert tp_schema.passes(integer, {"n": 1.0})   # JSON Schema's own integer
    for bound, good, bad in (("minimum", 2.0, -1.0), ("maximum", -2.0, 1.0), ("exclusiveMinimum", 1.0, 0.0),
                             ("exclusiveMaximum", -1.0, 0.0)):
        s = {"type": "object", "properties": {"x": {"type": "number", bound: 0}}}
        assert tp_schema.passes(s, {"x": good}, strict_integers=True), bound
        assert not tp_schema.passes(s, {"x": bad}, strict_integers=True), bound
        # on the bound: valid for minimum / maximum, but one nudge crosses it: jsonschema's to pass
        assert not tp_schema.passes(s, {"x": 0.0}, strict_integers=True), bound
    nested = {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    assert not tp_schema.passes(nested, [{"n": 2}, {"n": 2.0}], strict_integers=True)


def test_what_the_two_read_differently_goes_to_jsonschema(tmp_path):
    # found by trying to break the fast path: every one of these passed jsonschema-rs and not jsonschema
    integer = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for big in (1e20, 2.0**53, -1e17):          # its neighbours are integers too
        assert not tp_schema.passes(integer, {"n": big}, strict_integers=True), big
    text = {"type": "object", "properties": {"s": {"type": "string", "pattern": "\\S"}}}
    for blank in ("\x1f", "\x1c\x1d", "\x85"):  # whitespace to Python's re only
        assert not tp_schema.passes(text, {"s": blank}, ascii_strings=True), repr(blank)
    assert tp_schema.passes(text, {"s": "x y"}, ascii_strings=True)
    array = {"type": "object", "properties": {"a": {"type": "array"}, "i": {"type": "integer"}}}
    from decimal import Decimal
    assert not tp_schema.passes(array, {"a": ()}) and not tp_schema.passes(array, {"i": Decimal(2)})
    assert tp_schema.passes(array, {"a": [], "i": 2})
    # through the loader: the words are jsonschema's, as before
    src = (ROOT / "operators" / "relu" / "manifest.yaml").read_text()
    (tmp_path / "relu").mkdir()
    (tmp_path / "relu" / "manifest.yaml").write_text(src.replace("test_shapes: [[1],", "test_shapes: [[1.0e+20],"))
    with pytest.raises(tp_manifest.ManifestError, match="must be an integer"):
        tp_manifest.load(tmp_path / "relu" / "manifest.yaml")
    with pytest.raises(VerdictError, match="is not of type 'array'"):
        validate({**json.loads(VERDICTS[0].read_text()), "findings": ()})


def test_what_jsonschema_rs_cannot_take_goes_to_jsonschema():
    # a YAML mapping may have int keys, which JSON cannot hold
    assert tp_schema.passes({"type": "object"}, {1: 2}) is False
    assert tp_schema.passes({"type": "object"}, {"1": 2}) is True
    # a schema jsonschema-rs refuses is no pass either
    assert tp_schema.passes({"type": 12}, {}) is False


def test_committed_verdicts_pass_fast_and_validate():
    assert VERDICTS
    for p in VERDICTS:
        doc = json.loads(p.read_text())
        assert tp_schema.passes(VERDICT_SCHEMA, doc), p
        validate(doc, str(p))


@pytest.mark.parametrize("seed", range(2))
def test_a_verdict_jsonschema_rs_passes_jsonschema_validates(seed):
    import jsonschema

    rng = random.Random(seed)
    strict = jsonschema.validators.validator_for(VERDICT_SCHEMA)(VERDICT_SCHEMA)
    checked = rejected = 0
    for p in rng.sample(VERDICTS, min(8, len(VERDICTS))):
        doc = json.loads(p.read_text())
        for d in edits(doc, rng, 80):
            errs = list(strict.iter_errors(d))
            if tp_schema.passes(VERDICT_SCHEMA, d):
                checked += 1
                assert not errs, (p, [e.message for e in errs][:3])
            else:
                rejected += 1
                # the words of a rejected verdict are jsonschema's, as before
                assert verdict_errors(d) == bool(errs)
    assert checked > 50 and rejected > 10, (checked, rejected)
