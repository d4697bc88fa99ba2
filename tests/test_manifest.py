import re

import pytest

from tileport.model import manifest as tp_manifest

OPS = ["relu", "gelu", "silu_and_mul", "softmax", "rms_norm", "layer_norm", "matmul", "bmm"]


@pytest.mark.parametrize("op", OPS)
def test_every_operator_manifest_is_valid(repo, op):
    man = tp_manifest.load(repo / "operators" / op / "manifest.yaml")
    vs = tp_manifest.variants(man)
    assert len(vs) == len(man["dtypes"]) * len(man["configs"])
    assert len({v.id for v in vs}) == len(vs)


def test_variant_ids_are_readable(repo):
    man = tp_manifest.load(repo / "operators" / "matmul" / "manifest.yaml")
    assert tp_manifest.variants(man)[0].id == "f16-BM128-BN128-BK64"
    assert tp_manifest.variant_by_id(man, "bf16-BM128-BN128-BK32").constexprs == {"BM": 128, "BN": 128, "BK": 32}
    with pytest.raises(KeyError, match="known"):
        tp_manifest.variant_by_id(man, "f64-X1")


def test_yaml_syntax_error_names_line(op_copy):
    d = op_copy("relu")
    (d / "manifest.yaml").write_text("op: relu\nkernels: [\n  bad: : :\n")
    with pytest.raises(tp_manifest.ManifestError, match=r"manifest.yaml:\d+: YAML syntax error"):
        tp_manifest.load(d / "manifest.yaml")


def test_schema_error_names_key_value_and_line(op_copy):
    d = op_copy("relu")
    text = (d / "manifest.yaml").read_text().replace("dtypes: [f16, bf16, f32]", "dtypes: [f16, f12]")
    (d / "manifest.yaml").write_text(text)
    with pytest.raises(tp_manifest.ManifestError) as e:
        tp_manifest.load(d / "manifest.yaml")
    msg = str(e.value)
    line = text.splitlines().index("dtypes: [f16, f12]") + 1
    assert f"manifest.yaml:{line}:" in msg and "dtypes/1" in msg and "f12" in msg


def test_a_float_where_an_integer_belongs_is_an_error(op_copy):
    """JSON Schema's integer admits 1.0; the manifest's does not: `ndim: 1.0` would be carried as
    a float rank (and crash the translator later), so it is refused with its line."""
    d = op_copy("relu")
    text = (d / "manifest.yaml").read_text()
    bad = re.sub(r"ndim: 1\b", "ndim: 1.0", text, count=1)
    assert bad != text
    (d / "manifest.yaml").write_text(bad)
    with pytest.raises(tp_manifest.ManifestError) as e:
        tp_manifest.load(d / "manifest.yaml")
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "ndim: 1.0" in ln)
    assert f"manifest.yaml:{line}:" in str(e.value) and "not the number 1.0; write ndim: 1" in str(e.value)


def test_missing_tolerance_for_a_dtype(op_copy):
    d = op_copy("gelu")
    text = (d / "manifest.yaml").read_text().replace("  f32: {rtol: 1.0e-5, atol: 1.0e-5}\n", "")
    (d / "manifest.yaml").write_text(text)
    with pytest.raises(tp_manifest.ManifestError, match="no rtol/atol for listed dtype 'f32'"):
        tp_manifest.load(d / "manifest.yaml")


def test_op_must_match_folder(op_copy):
    d = op_copy("relu")
    (d / "manifest.yaml").write_text((d / "manifest.yaml").read_text().replace("op: relu", "op: other"))
    with pytest.raises(tp_manifest.ManifestError, match="does not match folder"):
        tp_manifest.load(d / "manifest.yaml")


# -- forms real launches need (issue 12 section 2, issue 17) ---------------------------------------

from manifest_ops import make_op, pick_manifest  # noqa: E402


def test_kernel_spelled_constexprs_any_sign_float_bool_and_explicit_variants(tmp_path):
    man = tp_manifest.load(make_op(tmp_path) / "manifest.yaml")
    pick = tp_manifest.variants(man, "pick")
    # the pairs the manifest means, nothing crossed: f16/bf16 with TILE 128, f32 with TILE 32
    assert [v.id for v in pick] == ["f16-TILE128-LATm1-bias1em06-NEGtrue", "bf16-TILE128-LATm1-bias1em06-NEGtrue",
                                    "f32-TILE32-LAT2-bias0p0-NEGfalse-occupancy2"]
    assert pick[0].constexprs == {"TILE": 128, "LAT": -1, "bias": 1e-06, "NEG": True}
    assert pick[2].hints == {"occupancy": 2} and pick[0].hints == {}
    # per-kernel configs are crossed with the operator's dtypes
    assert [v.id for v in tp_manifest.variants(man, "copy_all")] == ["f16-TILE64", "bf16-TILE64", "f32-TILE64"]
    assert tp_manifest.kernel_variant_ids(man) == [("pick", v.id) for v in pick] + \
        [("copy_all", f"{dt}-TILE64") for dt in ("f16", "bf16", "f32")]
    assert tp_manifest.variant_by_id(man, "f32-TILE64", "copy_all").constexprs == {"TILE": 64}
    with pytest.raises(KeyError, match="known"):
        tp_manifest.variant_by_id(man, "f32-TILE64", "pick")
    assert tp_manifest.array_dtype(man, "pick", "idx", pick[0]) == "i32"
    assert tp_manifest.array_dtype(man, "pick", "src", pick[0]) == "f16"


def test_configs_paired_with_dtypes_mean_only_those_variants(tmp_path):
    """Issue 17 item 4: launch code that picks 128/128/64 for f16 and 32/32/32 for f32."""
    text = pick_manifest().replace(
        "dtypes: [f16, bf16, f32]\n", "").replace(
        "    configs: [{TILE: 64}]\n",
        "    variants:\n      - {dtype: f16, constexprs: {TILE: 128}}\n      - {dtype: f32, constexprs: {TILE: 32}}\n")
    man = tp_manifest.load(make_op(tmp_path, manifest=text) / "manifest.yaml")
    assert [v.id for v in tp_manifest.variants(man, "copy_all")] == ["f16-TILE128", "f32-TILE32"]
    assert len(tp_manifest.kernel_variant_ids(man)) == 3 + 2


def _err(tmp_path, old, new, base=None):
    text = (base or pick_manifest())
    assert old in text, old
    d = make_op(tmp_path, manifest=text.replace(old, new, 1))
    with pytest.raises(tp_manifest.ManifestError) as e:
        tp_manifest.load(d / "manifest.yaml")
    msg = str(e.value)
    line = text.replace(old, new, 1)[:text.replace(old, new, 1).index(new)].count("\n") + 1 if new else None
    return msg, line


@pytest.mark.parametrize("old,new,words", [
    ("{TILE: 64}", "{tile m: 64}", "not a name a Python parameter can have"),
    ("{TILE: 64}", "{TILE: 1e-6}", "YAML reads 1e-6 as text: write 1.0e-6"),
    ("dtype: i32}", "dtype: int32}", "tileport spells int32 as i32"),
    ("role: output, dtype: f32}", "role: outptu, dtype: f32}", "(did you mean output?)"),
    ("ndim: 1, role: input}", "ndim: 9, role: input}", "above the largest allowed value 6; write ndim: 2"),
    ("    configs: [{TILE: 64}]", "    config: [{TILE: 64}]",
     "'config' is not a key of one kernel's launch description"),
    ("{Count: i32}", "{Count: int}", "write one of i32, i64, f32"),
    ("compiler_hints: {occupancy: 2}", "compiler_hints: {num_ctas: 3}",
     "the CTAs per cluster is the number 3; write one of 1, 2, 4, 8, 16"),
])
def test_schema_errors_are_words_with_line_and_what_to_write(tmp_path, old, new, words):
    """Issue 17 item 3: no JSON-schema regex quoted; the line, the key, what to write instead."""
    msg, line = _err(tmp_path, old, new)
    assert words in msg, msg
    assert f"manifest.yaml:{line}: key '" in msg, msg
    assert "^[" not in msg and "does not match '" not in msg and "is not valid under any" not in msg


@pytest.mark.parametrize("old,new,words", [
    ("    configs: [{TILE: 64}]\n", "    configs: [{TILE: 64}]\n    variants: [{dtype: f16}]\n",
     "either configs (crossed with dtypes) or variants"),
    ("{dtype: f32, constexprs", "{dtype: f32, dtypes: [f32], constexprs", "exactly one of the two"),
    ("{dtype: f32, constexprs: {TILE: 32, LAT: 2, bias: 0.0, NEG: false}, compiler_hints: {occupancy: 2}}",
     "{dtype: f16, constexprs: {TILE: 128, LAT: -1, bias: 1.0e-6, NEG: true}}", "occurs twice"),
    ("dtypes: [f16, bf16, f32]\n", "", "lacks the key 'dtypes': the configs of copy_all are crossed with it"),
    ("{ndim: 1, role: output, dtype: f32}", "{ndim: 1, role: output, dtype: {f16: f32, bf16: f32}}",
     "gives no dtype for variant dtype f32"),
    ("idx: {shape: [N], role: input, dtype: i32, init: permutation}", "idx: {shape: [N], role: input, dtype: i32}",
     "has the integer dtype i32 but no init"),
    ("src: {shape: [N], role: input}", "src: {shape: [N], role: input, init: {randint: [0, N]}}",
     "write dtype: i32 (or i64) for an index tensor"),
])
def test_consistency_errors_say_what_to_write(tmp_path, old, new, words):
    msg, _ = _err(tmp_path, old, new)
    assert words in msg and re.search(r"manifest.yaml:\d+: key '", msg), msg


def test_long_ids_are_shortened_with_a_hash_and_variants_can_be_named():
    long = tp_manifest.Variant("bf16", {f"STRIDE_{i}": 4096 for i in range(12)})
    assert len(long.id) <= tp_manifest.MAX_ID and re.fullmatch(r"bf16-STRIDE_0.*-h[0-9a-f]{8}", long.id)
    other = tp_manifest.Variant("bf16", {**long.constexprs, "STRIDE_11": 1})
    assert other.id != long.id
    assert tp_manifest.Variant("f16", {"TILE": 8}, name="tma_small").id == "f16-tma_small"


def test_tensors_without_dtype_take_the_family_of_their_variants(tmp_path):
    """An operator of integer variants (TileGym's MoE routing kernels: topk_ids int32 or int64)
    has integer tensors without naming their dtype; a float generator on them is the error."""
    from manifest_ops import make_op

    text = ("op: route\nkernels:\n  route:\n    arrays:\n      ids: {ndim: 1, role: input}\n"
            "      cnt: {ndim: 1, role: output, dtype: i32}\n    grid: \"(1, 1, 1)\"\n"
            "    variants: [{dtypes: [i32, i64], constexprs: {E: 8}}]\n"
            "shape_names: [N]\ntest_shapes: [[32]]\nperf_shapes: [[32]]\n"
            "tolerance: {i32: {rtol: 0.0, atol: 0.0}, i64: {rtol: 0.0, atol: 0.0}}\n"
            "tensors:\n  ids: {shape: [N], role: input, init: INIT}\n"
            "  cnt: {shape: [E], role: output, dtype: i32, init: {full: 0}}\n")
    man = tp_manifest.load(make_op(tmp_path, "route", manifest=text.replace("INIT", "{randint: [0, E]}"))
                           / "manifest.yaml")
    assert [v.id for v in tp_manifest.variants(man)] == ["i32-E8", "i64-E8"]
    with pytest.raises(tp_manifest.ManifestError, match=r"manifest.yaml:14: .*init randn makes floats but tensor "
                                                        r"'ids' has the dtype i32"):
        tp_manifest.load(make_op(tmp_path, "route", manifest=text.replace("INIT", "randn")) / "manifest.yaml")


# -- the schema file: schemas/manifest.schema.yaml (issue 30 item 4) -------------------------------

import json  # noqa: E402

import jsonschema  # noqa: E402

from tileport.core import yamlio  # noqa: E402


def _schema_copy(tmp_path, old, new):
    text = tp_manifest.SCHEMA_FILE.read_text()
    assert text.count(old) == 1, old
    f = tmp_path / "manifest.schema.yaml"
    f.write_text(text.replace(old, new))
    return f, text.replace(old, new)


def test_schema_file_with_a_repeated_key_is_refused_naming_file_and_line(tmp_path):
    """The bug the Python dicts had: a kernel's `fits` written twice, the second silently winning."""
    fits = "        fits:\n          type: string\n"
    f, text = _schema_copy(tmp_path, "        reference:\n", fits + "        reference:\n")
    lines = [i for i, ln in enumerate(text.splitlines(), 1) if ln == "        fits:"]
    assert len(lines) == 2
    with pytest.raises(yamlio.DuplicateKeyError) as e:
        tp_manifest.read_schema(f)
    assert str(e.value).startswith(f"{f}:{lines[1]}: duplicate key 'fits' at lines {lines[0]} and {lines[1]}")


@pytest.mark.parametrize("old,new,words", [
    # help written twice for one key path (a key and a branch of its anyOf): the one that wins would be arbitrary
    ("            - {const: all}\n", "            - {const: all, x-what: all, x-write: 'variants: all'}\n",
     "key known_defects/#/variants: a second help for key path known_defects/#/variants"),
    ("    x-what: the variant dtypes\n", "", "key dtypes: write both x-what and x-write"),
    ("u64, bool]}", "u64]}", "$defs/dtype lists"),
])
def test_schema_file_help_must_be_whole_and_once(tmp_path, old, new, words):
    f, _ = _schema_copy(tmp_path, old, new)
    with pytest.raises(ValueError) as e:
        tp_manifest.read_schema(f)
    assert str(e.value).startswith(f"{f}: ") and words in str(e.value), str(e.value)


def _resolve(schema: dict, key: tuple) -> bool:
    """Whether the generalised key path ``key`` leads to a subschema: a name through ``properties``, '*'
    through ``additionalProperties``, '#' through ``items``, any branch of an ``anyOf``."""
    if not key:
        return True
    step, rest = key[0], key[1:]
    nxt = (schema.get("additionalProperties") if step == "*" else schema.get("items") if step == "#"
           else schema.get("properties", {}).get(step))
    return (isinstance(nxt, dict) and _resolve(nxt, rest)) or any(_resolve(b, key) for b in schema.get("anyOf", []))


def test_every_help_entry_names_a_key_path_of_the_schema_that_messages_look_up():
    assert len(tp_manifest._KEYS) > 70
    for key in tp_manifest._KEYS:
        assert _resolve(tp_manifest.MANIFEST_SCHEMA, key), key
        # an error at a key of this path looks this entry up (not a path _general never returns)
        concrete = [0 if p == "#" else "some_name" if p == "*" else p for p in key]
        assert tp_manifest._general(concrete) == key, key
    jsonschema.Draft202012Validator.check_schema(tp_manifest.MANIFEST_SCHEMA)
    assert "x-what" not in json.dumps(tp_manifest.MANIFEST_SCHEMA)      # help is not part of the schema
    dtypes = "one of " + ", ".join(tp_manifest.DTYPES)
    assert dtypes in tp_manifest._KEYS[("dtypes", "#")][1]
    assert dtypes in tp_manifest._KEYS[("kernels", "*", "arrays", "*", "dtype")][1]


def test_a_kernels_fits_replaces_the_operators_as_its_help_says(tmp_path):
    """tileport.gpu.harness.fits evaluates a kernel's own fits instead of the operator's (not both)."""
    from manifest_ops import make_op

    from tileport.gpu import harness

    msg, line = _err(tmp_path, "    configs: [{TILE: 64}]\n", "    configs: [{TILE: 64}]\n    fits: 3\n")
    assert (f"manifest.yaml:{line + 1}: key 'kernels/copy_all/fits': this kernel's predicate a shape must meet "
            f"(instead of the operator's fits) must be a text, not the number 3; write fits: \"SEQ_LEN == ") in msg, msg
    text = pick_manifest().replace("    configs: [{TILE: 64}]\n", "    configs: [{TILE: 64}]\n    fits: \"N > 0\"\n")
    man = tp_manifest.load(make_op(tmp_path / "op", manifest=text + "fits: \"N < 0\"\n") / "manifest.yaml")
    kernels = {k for k, _, _ in harness.cases(man, "test")}
    assert kernels == {"copy_all"}


def _bias(man):
    return tp_manifest.variants(man, "pick")[0].constexprs["bias"]


@pytest.mark.parametrize("old,written,read", [
    ("bias: 1.0e-6", "1e2", _bias),
    ("bias: 1.0e-6", "1.5e3", _bias),
    ("bias: 1.0e-6", "-2E-7", _bias),
    ("bias: 1.0e-6", ".5e1", _bias),
    ("bias: 1.0e-6", "1.0e4", _bias),
    ("test_shapes: [[1000]]", "1e3", lambda m: m["test_shapes"][0][0]),
    ("perf_shapes: [[1048576]]", "2.5e6", lambda m: m["perf_shapes"][0][0]),
    ("src: {ndim: 1,", "1e0", lambda m: m["kernels"]["pick"]["arrays"]["src"]["ndim"]),
])
def test_the_advice_for_a_number_yaml_reads_as_text_loads_as_that_number(tmp_path, old, written, read):
    """YAML 1.1 (PyYAML) reads ``1e4`` and ``1.0e4`` as text (a float needs a dot and a signed exponent):
    the value the error advises loads, and as the number meant (an int where an integer belongs)."""
    new = re.sub(r"-?\d[\d.e-]*", written, old, count=1)
    assert new != old and written in new
    msg, _ = _err(tmp_path / "bad", old, new)
    advice = re.search(rf"YAML reads {re.escape(written)} as text: write (\S+) to give a number", msg)
    assert advice, msg
    fixed = pick_manifest().replace(old, new.replace(written, advice.group(1)), 1)
    man = tp_manifest.load(make_op(tmp_path / "ok", manifest=fixed) / "manifest.yaml")
    got = read(man)
    assert got == float(written) and not isinstance(got, bool), (advice.group(1), got)
    assert isinstance(got, int) == (read is not _bias), got


@pytest.mark.parametrize("new,words,never", [
    # a cuda.tile format the manifest has no dtype for: named as such (issue 34 item 3)
    ("dtype: f4e2m1fn}", "f4e2m1fn is cuda.tile's float4_e2m1fn, a format of its own", "did you mean"),
    ("dtype: float4_e2m1fn}", "a limit of tileport, not a typo", "did you mean"),
    # another float format spelled alike is no near miss (f8e5m3 is not f8e4m3fn)
    ("dtype: f8e5m3}", "is none of the accepted forms", "did you mean"),
    # a true near miss of the same format still is one
    ("dtype: f8e4m3}", "(did you mean f8e4m3fn?)", "a format of its own"),
])
def test_a_dtype_of_another_format_is_not_corrected_to_a_near_spelling(tmp_path, new, words, never):
    """The manifest check never asks "did you mean f8e4m3fn?" for a different float format:
    f8e8m0fnu (an e8m0 block scale) or f4e2m1fn is a format of its own in cuTile Python and
    cutile 0.5, not a typo of an e4m3 float."""
    msg, _ = _err(tmp_path, "dtype: f32}", new)
    assert words in msg and never not in msg, msg


def test_e8m0_block_scales_are_a_manifest_dtype(tmp_path):
    """f8e8m0fnu (cuda.tile's float8_e8m0fnu, block scales) is a manifest dtype (issue 34 item
    2 f): an array and a tensor of it load; randn cannot make it (no sign), uniform can."""
    base = pick_manifest()
    ok = (base.replace("stat: {ndim: 1, role: output, dtype: f32}", "stat: {ndim: 1, role: output, dtype: f32}\n"
                       "      sc: {ndim: 1, role: input, dtype: f8e8m0fnu}")
          .replace("  stat: {shape: [N], role: output, dtype: f32}",
                   "  stat: {shape: [N], role: output, dtype: f32}\n"
                   "  sc: {shape: [N], role: input, dtype: f8e8m0fnu, init: {uniform: [0.25, 4.0]}}"))
    assert ok != base and "sc: {ndim" in ok and "sc: {shape" in ok
    man = tp_manifest.load(make_op(tmp_path / "ok", manifest=ok) / "manifest.yaml")
    assert man["kernels"]["pick"]["arrays"]["sc"]["dtype"] == "f8e8m0fnu"
    assert "float8_e8m0fnu" not in tp_manifest.OTHER_CUTILE_DTYPES
    msg, _ = _err(tmp_path / "bad", "init: {uniform: [0.25, 4.0]}", "init: randn", base=ok)
    assert "block-scale dtype f8e8m0fnu" in msg and "uniform" in msg, msg


# -- error scales (issue 35) ----------------------------------------------------------------------
_SCALED = "    grid: \"(cdiv(N, TILE), 1, 1)\"\n    variants:\n"


def test_a_kernel_names_the_outputs_its_reference_gives_an_error_scale_for(tmp_path):
    """kernels.<k>.error_scale: output tensors of the kernel's call, each once (the reference
    returns one scale per name after its outputs, tileport.gpu.harness.split_expected)."""
    text = pick_manifest()
    assert text.count(_SCALED) == 1
    text = text.replace(_SCALED, "    grid: \"(cdiv(N, TILE), 1, 1)\"\n    error_scale: [dst, stat]\n    variants:\n")
    man = tp_manifest.load(make_op(tmp_path, manifest=text) / "manifest.yaml")
    assert man["kernels"]["pick"]["error_scale"] == ["dst", "stat"]
    assert "error_scale" not in man["kernels"]["copy_all"]


@pytest.mark.parametrize("value,words", [
    ("[src]", "'src' is an input of pick's call (tensors/src); an error scale belongs to an output tensor: "
              "write one of dst, stat"),
    ("[dts]", "'dts' is no tensor of pick's call (tensors: src, idx, dst, stat) (did you mean dst?)"),
    ("[dst, dst]", "lists dst twice; list each once"),
    ("[]", "is empty (it needs at least 1 entry); write error_scale: [Y] (output tensor names; the reference"),
    ("dst", "a list"),
    ("[2]", "error_scale/0"),
])
def test_an_error_scale_of_no_output_is_refused_at_its_line(tmp_path, value, words):
    msg, line = _err(tmp_path, _SCALED, f"    grid: \"(cdiv(N, TILE), 1, 1)\"\n    error_scale: {value}\n"
                                        f"    variants:\n")
    assert words in msg and "kernels/pick/error_scale" in msg, msg
    assert f"manifest.yaml:{line + 1}: key '" in msg, msg


def test_an_error_scale_of_a_list_output_is_refused(tmp_path):
    msg, _ = _err(tmp_path, "    reference: copy_reference\n",
                  "    reference: copy_reference\n    error_scale: [dsts]\n")
    assert "'dsts' is a list of tensors (kernels/copy_all/tensors/dsts/count)" in msg, msg
    assert "key 'kernels/copy_all/error_scale/0'" in msg, msg
