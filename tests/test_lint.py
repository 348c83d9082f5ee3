"""The code passes ruff's checks (configured in pyproject.toml), as part of every test run."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff") or pytest.fail("ruff is not installed: pip install -e '.[dev]'")
    result = subprocess.run([ruff, "check", "--no-cache", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_would_catch_an_unused_import(tmp_path):
    """The check above can fail: the same configuration refuses a planted finding."""
    planted = tmp_path / "canary.py"
    planted.write_text("import os\n")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(planted)],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert result.returncode == 1 and "F401" in result.stdout
