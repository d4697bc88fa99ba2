"""make test's two pytest-xdist workers (tests/conftest.py's scheduler): which tests form a unit
that one worker runs whole, and that the longest units named in its table still exist."""
import re

from conftest import REPO, SHARED_UNITS, UNIT_SECONDS, unit_of


def test_units_are_files_but_the_shared_ones():
    assert unit_of("tests/test_ffi.py::test_null_data_pointer") == "host_library"
    assert unit_of("tests/test_host.py::test_llm_shim_is_checked_built_and_transcribed[a::b]") == "host_library"
    assert unit_of("tests/test_workflow.py::test_noop_rerun_plans_zero_jobs") == "tests/test_workflow.py"
    assert unit_of("tests/test_mutations.py::test_catch_rate") != unit_of("tests/test_constructs.py::test_x")


def test_the_table_names_existing_files_and_units():
    """A renamed or split test file would silently leave the longest-first order."""
    files = {p.name for p in (REPO / "tests").glob("test_*.py")}
    assert set(SHARED_UNITS) <= files
    assert {u for u in UNIT_SECONDS if u not in SHARED_UNITS.values()} <= files
    # the longest go out first: the three workflow files lead
    first = sorted(UNIT_SECONDS, key=lambda u: -UNIT_SECONDS[u])[:3]
    assert sorted(first) == ["test_workflow.py", "test_workflow_llm.py", "test_workflow_llm_rounds.py"]


def test_make_test_runs_the_scheduler():
    """The scheduler takes over --dist loadfile only; make test must ask for it."""
    make = (REPO / "Makefile").read_text()
    (line,) = [x for x in make.splitlines() if "-m pytest" in x and "$(TEST_JOBS)" in x]
    assert re.search(r"--dist loadfile\b", line), line
