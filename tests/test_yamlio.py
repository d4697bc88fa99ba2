"""Duplicate YAML keys are an error naming the file and both lines, in every YAML tileport reads:
manifests and config.yaml's schema (tileport.core.yamlio), and config.yaml / the profiles, which
Snakemake parses itself and tileport checks again when the Snakefile loads."""
import os
import subprocess
import sys

import pytest
import yaml
from conftest import REPO, copy_workflow

from tileport.core import yamlio
from tileport.model import manifest

SNAKEMAKE = os.path.join(os.path.dirname(sys.executable), "snakemake")


@pytest.mark.parametrize("text,key,lines", [
    ("a: 1\nb: 2\na: 3\n", "a", (1, 3)),
    ("k:\n  x: 1\n  y: 2\n  x: 3\nz: 0\n", "x", (2, 4)),
    ("l:\n  - {p: 1, q: 2}\n  - {p: 1, p: 2}\n", "p", (3, 3)),
    ('{"a": 1, "b": {"c": 1, "c": 2}}', "c", (1, 1)),          # JSON is YAML: the same rule
])
def test_duplicate_key_names_file_key_and_both_lines(text, key, lines):
    with pytest.raises(yamlio.DuplicateKeyError) as e:
        yamlio.load(text, "some/file.yaml")
    err = e.value
    assert (err.key, err.first_line, err.line) == (key, *lines)
    first, second = lines
    where = f"lines {first} and {second}" if first != second else f"line {first}, columns"
    assert str(err).startswith(f"some/file.yaml:{second}: duplicate key '{key}' at {where}")
    assert isinstance(err, yaml.YAMLError)          # callers reporting YAML errors report it too


def test_every_duplicate_key_of_a_file_is_in_the_one_error_each_with_its_lines(tmp_path):
    """Not the first only: fixing one repeat and rerunning to meet the next is what one error with all of
    them spares (keys of nested mappings too, a key written three times with its three lines)."""
    text = ("a: 1\nb: 2\na: 3\n"
            "k:\n  x: 1\n  y: 2\n  x: 3\n  x: 4\n"
            "l:\n  - {p: 1, p: 2}\n"
            "b: 5\n")
    with pytest.raises(yamlio.DuplicateKeyError) as e:
        yamlio.load(text, "f.yaml")
    err = e.value
    assert (err.key, err.first_line, err.line) == ("a", 1, 3)          # the first repeat in the file
    assert err.duplicates == [("a", [1, 3]), ("x", [5, 7, 8]), ("p", [10, 10]), ("b", [2, 11])]
    assert str(err) == ("f.yaml:3: duplicate keys 'a' at lines 1 and 3; 'x' at lines 5, 7 and 8; "
                        "'p' at line 10, columns 6 and 12; 'b' at lines 2 and 11 "
                        "(YAML would silently keep the last value of each)")
    # an error after a repeat does not hide it (the repeat comes first); one before it is the error
    with pytest.raises(yamlio.DuplicateKeyError, match=r"^f.yaml:3: duplicate key 'a' at lines 1 and 3 \(YAML"):
        yamlio.load("a: 1\nb: 2\na: 3\nno: 4\n", "f.yaml")
    with pytest.raises(yamlio.AmbiguousKeyError, match=r"^f.yaml:1: key 'no'"):
        yamlio.load("no: 4\na: 1\na: 3\n", "f.yaml")
    f = tmp_path / "f.yaml"
    f.write_text(text)
    assert yamlio.check_file(f) == f"{f}:3: duplicate keys 'a' at lines 1 and 3; 'x' at lines 5, 7 and 8; " + \
        str(err).split("; 'x' at lines 5, 7 and 8; ", 1)[1]


@pytest.mark.parametrize("text,word,line", [("on: 1\n", "on", 1), ("tensors:\n  x: {}\n  no: {}\n", "no", 3),
                                            ("~: 1\n", "~", 1)])
def test_key_word_that_yaml_reads_as_bool_or_null_is_an_error(text, word, line):
    with pytest.raises(yamlio.AmbiguousKeyError) as e:
        yamlio.load(text, "m.yaml")
    assert str(e.value).startswith(f"m.yaml:{line}: key '{word}' reads as ")
    assert yamlio.load(text.replace(f"{word}:", f"'{word}':")) is not None      # quoted: a name


def test_valid_yaml_loads_as_safe_load_does():
    text = ("base: &b {x: 1, y: 2}\n"
            "merged:\n  <<: *b\n  x: 3\n"        # a key beside a merge overrides it: not a duplicate
            "list: [1, 2.5, 'three', null, true]\n"
            "same_value_other_key: {a: 1, b: 1}\n")
    assert yamlio.load(text) == yaml.safe_load(text)
    assert yamlio.load(text)["merged"] == {"x": 3, "y": 2}
    assert yamlio.load("") is None
    with pytest.raises(yaml.YAMLError):
        yamlio.load("a: [1, 2\n")


def test_every_shipped_yaml_file_is_strictly_valid():
    files = [REPO / "config.yaml", *REPO.glob("schemas/*.yaml"), *REPO.glob("profiles/*/*.yaml"),
             *REPO.glob("operators/*/manifest.yaml"), *REPO.glob("tests/data/operators/*/manifest.yaml"),
             *REPO.glob("envs/*.yaml")]
    assert len(files) > 10
    assert [p for f in files if (p := yamlio.check_file(f))] == []


def test_manifest_with_a_repeated_key_is_an_error_naming_both_lines(op_copy):
    """The issue's case: ``dtypes`` twice; the second ([f32]) would silently drop f16 and bf16."""
    d = op_copy("softmax")
    m = d / "manifest.yaml"
    text = m.read_text()
    assert "dtypes: [f16, bf16, f32]" in text
    m.write_text(text + "dtypes: [f32]\n")
    first = text.splitlines().index("dtypes: [f16, bf16, f32]") + 1
    last = len(text.splitlines()) + 1
    with pytest.raises(manifest.ManifestError) as e:
        manifest.load(m)
    msg = str(e.value)
    assert msg.startswith(f"{m}:{last}:") and f"duplicate key 'dtypes' at lines {first} and {last}" in msg


@pytest.fixture(scope="module")
def wf(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("yaml"), ["relu"])


def dry_run(wd, *args):
    return subprocess.run([SNAKEMAKE, "--cores", "1", "-n", "results/summary.csv", *args],
                          cwd=wd, capture_output=True, text=True)


@pytest.mark.parametrize("rel,anchor,repeat", [
    # config.yaml: a second `gpu` further down silently replaced the first (the schema passes)
    ("config.yaml", "gpu:", '\ngpu: "off"\n'),
    # the workflow profile, merged into every run: a second rerun-triggers silently wins
    ("profiles/default/config.yaml", "rerun-triggers:", "\nrerun-triggers: [mtime]\n"),
])
def test_snakefile_load_rejects_repeated_keys_in_files_snakemake_reads(wf, rel, anchor, repeat):
    f = wf / rel
    text = f.read_text()
    at = [i for i, line in enumerate((text + repeat).splitlines(), 1) if line.startswith(anchor.strip())]
    first, last = at[0], at[-1]
    try:
        f.write_text(text + repeat)
        p = dry_run(wf)
    finally:
        f.write_text(text)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-2000:]
    key = anchor.strip().rstrip(":")
    assert f"{rel}:{last}: duplicate key '{key}' at lines {first} and {last}" in out, out[-2000:]


def test_profile_given_with_profile_is_checked(wf, tmp_path):
    """A site profile outside the checkout (--profile names it): a second ``bench`` under
    set-resources would silently replace the first's resources."""
    site = tmp_path / "mysite"
    site.mkdir()
    (site / "config.yaml").write_text("keep-going: true\nset-resources:\n  bench:\n    runtime: 60\n"
                                      "  bench:\n    runtime: 5\n")
    p = dry_run(wf, "--profile", str(site))
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-2000:]
    assert f"{site}/config.yaml:5: duplicate key 'bench' at lines 3 and 5" in out, out[-2000:]
