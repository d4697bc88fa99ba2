"""Deleted routing records (checkpoint outputs) are found from the files made after them
(tileport/flow/route_files.py); the workflow-level behaviour is in tests/test_workflow.py."""
import json
import subprocess

import pytest
import yaml
from conftest import REPO

from tileport.flow import route as tp_route
from tileport.flow import route_files


def tree(tmp_path):
    """A results tree like a run leaves it: op 'act' with kernel k, writer attempts 1 and 2
    (attempt 1 accepted, GPU round 1 asked for attempt 2, tested in round 2)."""
    res = tmp_path / "results"
    op = res / "act"
    for n in (1, 2):
        a = op / "attempts" / "k" / str(n)
        a.mkdir(parents=True)
        (a / "write.json").write_text("{}")
        (a / "route.json").write_text("{}")
    (op / "write_kernel").mkdir()
    (op / "write_kernel" / "k.json").write_text(json.dumps({"kernel": "k", "attempt": 1}))
    for r in (1, 2):
        (op / "rounds" / str(r)).mkdir(parents=True)
        (op / "rounds" / str(r) / "route.json").write_text("{}")
    r2 = op / "rounds" / "2" / "act"
    (r2 / "write_kernel").mkdir(parents=True)
    (r2 / "write_kernel" / "k.json").write_text(json.dumps({"kernel": "k", "attempt": 2}))
    (op / "final.json").write_text(json.dumps({"rounds": [{"round": 1, "attempts": {"k": 1}},
                                                          {"round": 2, "attempts": {"k": 2}}]}))
    (res / "host").mkdir()
    return res


def test_complete_tree_misses_nothing(tmp_path):
    assert route_files.missing_routes(tree(tmp_path)) == []
    assert route_files.missing_routes(tmp_path / "nothing-here") == []


def test_every_deleted_route_is_found_with_what_needs_it(tmp_path):
    res = tree(tmp_path)
    op = res / "act"
    gone = [op / "rounds" / "1" / "route.json", op / "rounds" / "2" / "route.json",
            op / "attempts" / "k" / "1" / "route.json", op / "attempts" / "k" / "2" / "route.json"]
    for g in gone:
        g.unlink()
    found = dict(route_files.missing_routes(res))
    assert sorted(found) == sorted(map(str, gone))
    assert found[str(op / "rounds" / "2" / "route.json")] == str(op / "final.json")
    # without final.json, the later files still prove each route was made
    (op / "final.json").unlink()
    found = dict(route_files.missing_routes(res))
    assert sorted(found) == sorted(map(str, gone[:1] + gone[2:]))
    assert found[str(op / "rounds" / "1" / "route.json")] == str(op / "rounds" / "2" / "act")
    assert found[str(op / "attempts" / "k" / "2" / "route.json")] == str(
        op / "rounds" / "2" / "act" / "write_kernel" / "k.json")


def test_a_route_never_made_is_not_missing(tmp_path):
    """A loop still running (attempt 1 checked, not yet routed) needs nothing yet."""
    res = tmp_path / "results"
    a = res / "act" / "attempts" / "k" / "1"
    a.mkdir(parents=True)
    (a / "write.json").write_text("{}")
    (a / "check.json").write_text("{}")
    (res / "act" / "write_kernel").mkdir()
    (res / "act" / "write_kernel" / "k.json").write_text("# ERROR: see placeholder\n")
    assert route_files.missing_routes(res) == []


def test_make_run_rebuilds_missing_routes_before_the_run():
    out = subprocess.run(["make", "-n", "run"], cwd=REPO, capture_output=True, text=True).stdout.splitlines()
    rebuild = next(i for i, x in enumerate(out) if "-m tileport.flow.route_files results" in x)
    main = next(i for i, x in enumerate(out) if "/snakemake --cores all results/summary.csv" in x)
    assert rebuild < main


def test_operators_deleted_after_the_summary_are_named(tmp_path):
    """An operator whose analysis summary.csv has at PASS and whose final round is gone is named;
    one whose analysis blocked (never a final round), one still whole, one without an operator
    folder and one the summary never listed are not."""
    r = tmp_path / "results"
    r.mkdir()
    (r / "summary.csv").write_text("op,kernel,variant,analyze\ngone,k,v,PASS\ngone,k,w,PASS\n"
                                   "notes,k,v,PASS_WITH_NOTES\nblocked,k,v,BLOCKED\nwhole,k,v,PASS\n"
                                   "retired,k,v,PASS\n")
    for op in ("gone", "notes", "blocked", "whole", "new"):     # "retired" has no operator folder
        (tmp_path / "operators" / op).mkdir(parents=True)
    (r / "whole").mkdir()
    (r / "whole" / "final.json").write_text("{}")
    assert route_files.deleted_operators(r) == ["gone", "notes"]
    assert route_files.deleted_operators(tmp_path / "none") == []
    # names that are no operator's: a path out of results/, an absolute one, one too long;
    # bytes that are no UTF-8 do not stop it
    (tmp_path / "operators" / "gone" / "sub").mkdir()
    (r / "summary.csv").write_bytes(b"op,analyze\n../operators/gone,PASS\n/tmp,PASS\ngone/sub,PASS\n"
                                    + b"a" * 300 + b",PASS\nr\xe9lu,PASS\ngone,PASS\n")
    assert route_files.deleted_operators(r) == ["gone"]


@pytest.mark.parametrize("writer,cap,builder,host_cap,restricted", [
    ("translator", 2, "deterministic", 2, False), ("translator", 2, "auto", 2, True),
    ("anthropic", 2, "deterministic", 1, True), ("anthropic", 1, "deterministic", 2, False)])
def test_rebuild_args_restrict_to_the_routing_rules_only_where_they_are_checkpoints(writer, cap, builder, host_cap,
                                                                                    restricted, tmp_path, capsys):
    cfg = {"roles": {"kernel_writer": writer, "host_builder": builder},
           "attempts": {"write_kernel": cap, "host_shim": host_cap}}
    rules = route_files.rule_names(REPO / "rules")
    assert {"check_kernel", "gpu_route", "write_kernel", *route_files.ROUTE_FOLLOWERS} <= set(rules)
    plain = ["--allowed-rules", *sorted(set(rules) - set(route_files.ROUTE_FOLLOWERS))]
    want = ["--allowed-rules", "check_kernel", "gpu_route"] if restricted else plain
    assert route_files.rebuild_args(tp_route.may_retry_under(cfg), rules) == want
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    (tmp_path / "rules").symlink_to(REPO / "rules")
    assert route_files.main(["--rebuild-args", str(tmp_path / "config.yaml")]) == 0
    assert capsys.readouterr().out.split() == want


def test_rebuild_args_name_the_config_and_the_missing_key(tmp_path, capsys):
    """A config.yaml without the roles or caps the rebuild reads, or one that does not read, is an
    error naming the file and the cause, never a traceback."""
    (tmp_path / "rules").symlink_to(REPO / "rules")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"roles": {"kernel_writer": "translator"}, "attempts": {"write_kernel": 2}}))
    assert route_files.main(["--rebuild-args", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in err and "the key 'host_builder' is missing" in err
    cfg.write_text("roles: 1\n")
    assert route_files.main(["--rebuild-args", str(cfg)]) == 2
    assert "roles or attempts is no mapping" in capsys.readouterr().err
    cfg.write_text("roles: {}\nroles: {}\n")
    assert route_files.main(["--rebuild-args", str(cfg)]) == 2
    assert str(cfg) in capsys.readouterr().err
    assert route_files.main(["--rebuild-args", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err
