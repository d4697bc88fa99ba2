"""Loop control the suites use, ported with the real compilers (tests/data/operators/loopctl,
kernels of this repository's own): ``continue`` (Liger's TVD with an ignored label) and a
``range`` a constexpr empties (Liger's KL-div with N_FULL_CHUNKS 0)."""
import re
from pathlib import Path

from conftest import run_kernels

from tileport.ir_diff import diff_ir

OP = Path(__file__).parent / "data" / "operators" / "loopctl"


def _ok(diff, hints=False):
    """PASS; with ``hints``, PASS_WITH_NOTES whose warnings are all hints (a persistent loop:
    cutile assumes its index's range, cuTile Python does not, as for Liger's TVD)."""
    warn = [f for f in diff["findings"] if f["severity"] != "info"]
    if hints and diff["verdict"] == "PASS_WITH_NOTES":
        assert warn and all(f["category"] == "hint" for f in warn), warn
        return
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])


def test_continue_in_a_persistent_loop_reaches_ir_pass(tmp_path):
    """``if f == -1: ...; continue``: Rust's ``continue`` (cutile's Tile IR ``continue`` with the
    loop's carried tokens) matches cuTile Python's; the branch's store moved after the
    ``continue`` (never run there in the reference) fails."""
    diff, ref, port = run_kernels(OP, tmp_path, "loopctl", ["continue_kernel"],
                                  "f16-n_tiles8-TILE128")["continue_kernel"]
    _ok(diff, hints=True)
    r, p = ref.read_text(), port.read_text()
    ops = [len(re.findall(r"^\s*continue\b(?!_)", t, re.M)) for t in (r, p)]
    assert ops[0] == ops[1] == 2, ops           # the branch's and the body's end
    # the port without its `continue`: the doubled tile is stored on flagged tiles too
    lines = p.splitlines()
    cont = next(i for i, ln in enumerate(lines) if re.match(r"\s*continue %", ln)
                and lines[i + 1].strip().startswith("} else"))
    mutant = "\n".join(lines[:cont] + [re.sub(r"continue (%\S+)(.*): (.*)$", r"yield \1\2: \3", lines[cont])]
                       + lines[cont + 1:])
    assert mutant != p
    assert diff_ir(r, mutant).verdict == "FAIL"


def test_an_empty_range_entry_leaves_the_loop_out(tmp_path):
    """K 0: cuTile Python keeps ``for %i in (%c0 to %c0, step %c1)``, the port has no loop
    (cutile 0.5.0 cannot write one); the IR diff removes the zero-trip loop: PASS with an info
    note. K 2 keeps its loop on both sides."""
    for variant in ("f16-K0-TILE128", "f16-K2-TILE128"):
        diff, ref, port = run_kernels(OP, tmp_path / variant, "loopctl", ["empty_range_kernel"],
                                      variant)["empty_range_kernel"]
        _ok(diff)
        zero = [f for f in diff["findings"] if "zero-trip" in f["message"]]
        assert bool(zero) == (variant == "f16-K0-TILE128"), diff["findings"]
        assert ("for %" in port.read_text()) == (variant == "f16-K2-TILE128")
        assert "for %" in ref.read_text()


def test_a_float_scalar_compared_in_an_if(tmp_path):
    """``if s != 0.0`` / ``if s > 1.5`` on a run-time f32 parameter (Liger's GRPO: ``if delta !=
    0.0``): cmpf on 0-d tiles, unordered for ``!=`` as cuTile Python writes it (cutile's own
    ``!=`` on f32 is ordered); the reference's ``!=`` made ordered (NaN then takes the other
    branch) fails."""
    diff, ref, port = run_kernels(OP, tmp_path, "loopctl", ["float_scalar_if_kernel"],
                                  "f16-TILE128")["float_scalar_if_kernel"]
    _ok(diff)
    r = ref.read_text()
    assert "not_equal unordered" in r and "not_equal unordered" in port.read_text()
    mutant = r.replace("not_equal unordered", "not_equal ordered", 1)
    assert diff_ir(mutant, port.read_text()).verdict == "FAIL"


def test_a_name_bound_in_both_branches_reaches_ir_pass(tmp_path):
    """``if s != 0.0: w = min(t, s) else: w = t`` then ``w * 3``: the port's declaration
    before the if (an unread zero) and its two assignments are cuTile Python's if yielding w;
    the reference's test negated (the other branch's value yielded) fails."""
    diff, ref, port = run_kernels(OP, tmp_path, "loopctl", ["branch_bound_kernel"],
                                  "f16-TILE128")["branch_bound_kernel"]
    _ok(diff)
    r = ref.read_text()
    assert re.search(r"= if %\S+ -> \(tile<128xf32>\)", r), r
    mutant = r.replace("cmpf not_equal unordered", "cmpf equal unordered", 1)
    assert mutant != r
    assert diff_ir(mutant, port.read_text()).verdict == "FAIL"


def _loads_outside_loops(tileir: str, op: str = r"load_\w+tko") -> dict[str, int]:
    """{'before': ``op``s (a pattern; default: loads) ahead of the first ``for``, 'inside': those
    within it} of a Tile IR text."""
    head, _, body = tileir.partition("for %")
    count = lambda t: len(re.findall(rf"\b{op}\b", t))  # noqa: E731
    return {"before": count(head), "inside": count(body)}


def _ops_in_more_loops(diff: dict) -> int:
    """How many ops the IR diff ``diff`` says run inside more loops on one side (0: no such note)."""
    return sum(int(m.group(1)) for f in diff["findings"]
               for m in [re.match(r"(\d+) op\(s\) run inside more loops", f["message"])] if m)


def test_invariant_loads_move_before_the_loop(tmp_path, monkeypatch):
    """cuTile Python moves a loop's invariant ops, loads included, before the loop (cuda-tile
    1.7.0 code_motion); the port moves them there too (translate.code_motion): w's load and
    the scale made from it before the ``for`` on both sides, x's (it reads the index) and y's
    (the loop stores to y) inside; IR diff PASS. Translated without the motion, the same kernel
    gets the diff's loop-placement warning. x's index ``(bid * n_tiles + i) % n_tiles``: the
    product is computed before the loop on both sides, the rest inside; written inside the loop
    (no invariant parts taken out of a ``let``), the diff says so."""
    diff, ref, port = run_kernels(OP, tmp_path / "moved", "loopctl", ["invariant_kernel"],
                                  "f16-n_tiles8-TILE128")["invariant_kernel"]
    _ok(diff)
    assert not [f for f in diff["findings"] if "loop" in f["message"] and f["category"] == "memory"]
    r, p = ref.read_text(), port.read_text()
    assert _loads_outside_loops(r) == _loads_outside_loops(p) == {"before": 1, "inside": 2}, (r, p)
    assert _loads_outside_loops(r, "muli") == _loads_outside_loops(p, "muli") == {"before": 1, "inside": 0}, (r, p)
    assert p.count("fma ") == r.count("fma ") == 2, (r, p)

    from tileport.translate import code_motion
    moved = diff
    monkeypatch.setattr(code_motion, "invariant_parts", lambda *a: [])
    diff, _, port = run_kernels(OP, tmp_path / "product", "loopctl", ["invariant_kernel"],
                                "f16-n_tiles8-TILE128")["invariant_kernel"]
    assert _loads_outside_loops(port.read_text(), "muli") == {"before": 0, "inside": 1}
    # one op more computed on every trip on the port side: the diff counts it
    assert _ops_in_more_loops(diff) == _ops_in_more_loops(moved) + 1, (diff["findings"], moved["findings"])

    monkeypatch.setattr(code_motion, "hoist_invariant_lets", lambda lines, **kw: 0)
    diff, _, port = run_kernels(OP, tmp_path / "kept", "loopctl", ["invariant_kernel"],
                                "f16-n_tiles8-TILE128")["invariant_kernel"]
    assert _loads_outside_loops(port.read_text()) == {"before": 0, "inside": 3}
    placed = [f for f in diff["findings"] if f["category"] == "memory" and "loop" in f["message"]]
    assert diff["verdict"] == "PASS_WITH_NOTES" and placed, diff["findings"]
