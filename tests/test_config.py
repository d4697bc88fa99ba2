import copy

import pytest

from tileport import config as C
from tileport import yamlio


@pytest.fixture
def cfg(repo):
    return yamlio.load_file(repo / "config.yaml")


def check(cfg, repo):
    return C.validate(cfg, repo / "schemas" / "config.schema.yaml")


def test_shipped_config_is_valid(cfg, repo):
    assert check(cfg, repo)["gpu_target"] == "sm_90"


@pytest.mark.parametrize("edit,expect", [
    (lambda c: c.update(gpu_target="hopper"), "key 'gpu_target': value 'hopper' -- expected a string matching"),
    (lambda c: c["attempts"].update(write_kernel=0), "key 'attempts/write_kernel': value 0 -- expected >= 1"),
    (lambda c: c["roles"].update(kernel_writer="gpt"), "key 'roles/kernel_writer': value 'gpt' -- expected one of"),
    (lambda c: c.update(colour="red"), "unknown key(s) ['colour']"),
    (lambda c: c.update(operators="softmax"), "key 'operators': value 'softmax' -- expected type array"),
])
def test_invalid_config_names_key_value_expected(cfg, repo, edit, expect):
    bad = copy.deepcopy(cfg)
    edit(bad)
    with pytest.raises(C.ConfigError) as e:
        check(bad, repo)
    assert expect in str(e.value)
