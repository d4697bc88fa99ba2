import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


@pytest.fixture
def repo():
    return REPO


@pytest.fixture
def op_copy(tmp_path):
    """Copy an operator folder into tmp_path/operators/<name> and return its path."""

    def _copy(op, name=None):
        dst = tmp_path / "operators" / (name or op)
        shutil.copytree(REPO / "operators" / op, dst)
        if name:
            m = dst / "manifest.yaml"
            m.write_text(m.read_text().replace(f"op: {op}", f"op: {name}", 1))
        return dst

    return _copy
