"""The code passes ruff's and mypy's checks (configured in pyproject.toml), as part of every test run."""

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


def test_mypy_finds_nothing(tmp_path):
    """The library, the grid UDFs and the plugins type-check as their annotations state
    (configuration in pyproject.toml); a fresh cache, so the answer is today's."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_would_catch_a_wrong_type(tmp_path):
    """The check above can fail: the same configuration refuses a planted finding."""
    planted = tmp_path / "canary.py"
    planted.write_text("from kafkasec import KafkaPrincipal\n\nKafkaPrincipal.parse(42)\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache"), "--config-file",
         str(ROOT / "pyproject.toml"), str(planted)],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert result.returncode == 1 and "arg-type" in result.stdout, result.stdout
