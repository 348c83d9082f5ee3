"""docs/writing-plugins.md's plugin, written file by file from the page to an empty folder, passes
its own tests and the kit's contract under pytest: quickly on PYTHONPATH, and (slow) installed
with pip into a fresh virtualenv next to kafkasec[test] built from this checkout."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "writing-plugins.md"
STEP_TIMEOUT_S = 300  # a hung pip or pytest is a failure, not a stuck CI job
FILE_BLOCK = re.compile(r"^```\w+\n# (?P<path>[\w./-]+)\n(?P<code>.*?)^```", flags=re.MULTILINE | re.DOTALL)


def walkthrough_files() -> dict[str, str]:
    """The page's files: each block that opens with a ``# <path>`` comment."""
    text = PAGE.read_text(encoding="utf-8")
    return {match["path"]: f"# {match['path']}\n{match['code']}" for match in FILE_BLOCK.finditer(text)}


def write_walkthrough(folder: Path) -> None:
    for path, code in walkthrough_files().items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(code, encoding="utf-8")


def check(argv, **options):
    finished = subprocess.run([str(part) for part in argv], capture_output=True, text=True, timeout=STEP_TIMEOUT_S, **options)
    assert finished.returncode == 0, f"{' '.join(map(str, argv))}\n{finished.stdout}\n{finished.stderr}"
    return finished


def test_the_page_has_the_files_of_its_layout():
    assert set(walkthrough_files()) == {"pyproject.toml", "src/kafkasec_readonly/__init__.py", "tests/test_readonly.py"}


def pytest_on_pythonpath(folder: Path) -> subprocess.CompletedProcess:
    """The walkthrough's tests in ``folder``, its plugin found on PYTHONPATH."""
    environment = {**os.environ, "PYTHONPATH": str(folder / "src")}
    environment.pop("KAFKASEC_LOAD_PLUGINS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=folder,
                          env=environment, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)


def test_the_walkthroughs_plugin_passes_its_tests_and_the_contract(tmp_path):
    write_walkthrough(tmp_path)
    finished = pytest_on_pythonpath(tmp_path)
    assert finished.returncode == 0 and "9 passed" in finished.stdout, finished.stdout + finished.stderr


def test_a_plugin_that_ignores_its_setting_passes_the_contract_and_fails_the_rule_test(tmp_path):
    # The contract checks consistency: a plugin that does nothing keeps it. The page says so, and
    # teaches the test that knows the rule.
    write_walkthrough(tmp_path)
    plugin = tmp_path / "src" / "kafkasec_readonly" / "__init__.py"
    source = plugin.read_text(encoding="utf-8")
    reads_the_setting = "frozenset(PRINCIPALS.value(security.config))"
    assert source.count(reads_the_setting) == 1
    plugin.write_text(source.replace(reads_the_setting, "frozenset()"), encoding="utf-8")
    finished = pytest_on_pythonpath(tmp_path)
    assert "FAILED tests/test_readonly.py::test_alice_reads_and_cannot_write" in finished.stdout, finished.stdout
    assert "1 failed, 8 passed" in finished.stdout, finished.stdout


@pytest.mark.slow
def test_the_walkthroughs_package_installed_in_a_fresh_virtualenv_passes(tmp_path):
    # As an author has it: kafkasec[test] from a wheel and the plugin from its folder, installed
    # with pip into a virtualenv of their own; pytest finds the kit through its entry point.
    project = tmp_path / "kafkasec-readonly"
    project.mkdir()
    write_walkthrough(project)
    wheels = tmp_path / "wheels"
    if importlib.util.find_spec("build") is None:
        pytest.skip("the 'build' package (in the dev extra) is not installed")
    # The wheel from the sdist, as a release is built (and nothing written into the checkout).
    check([sys.executable, "-m", "build", "--outdir", wheels, ROOT])
    (wheel,) = wheels.glob("kafkasec-*.whl")
    home = tmp_path / "venv"
    # No pip of its own (ensurepip would cost seconds): this interpreter's pip installs into it.
    check([sys.executable, "-m", "venv", "--without-pip", home])
    python = home / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--disable-pip-version-check"]
    check([*pip, f"kafkasec[test] @ {wheel.as_uri()}"])
    check([*pip, project])
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", "VIRTUAL_ENV", "KAFKASEC_LOAD_PLUGINS", "PYTHONHOME")}
    finished = check([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project, env=environment)
    assert "9 passed" in finished.stdout, finished.stdout
