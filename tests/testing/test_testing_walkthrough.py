"""docs/writing-plugins.md's plugin, written file by file from the page to an empty folder, passes
its own tests and the kit's contract under pytest."""

import os
import re
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "writing-plugins.md"
FILE_BLOCK = re.compile(r"^```\w+\n# (?P<path>[\w./-]+)\n(?P<code>.*?)^```", flags=re.MULTILINE | re.DOTALL)


def walkthrough_files() -> dict[str, str]:
    """The page's files: each block that opens with a ``# <path>`` comment."""
    text = PAGE.read_text(encoding="utf-8")
    return {match["path"]: f"# {match['path']}\n{match['code']}" for match in FILE_BLOCK.finditer(text)}


def write_walkthrough(folder: Path) -> None:
    for path, code in walkthrough_files().items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(code, encoding="utf-8")


def test_the_page_has_the_files_of_its_layout():
    assert set(walkthrough_files()) == {"pyproject.toml", "src/kafkasec_readonly/__init__.py", "tests/test_readonly.py"}


def test_the_walkthroughs_plugin_passes_its_tests_and_the_contract(tmp_path):
    write_walkthrough(tmp_path)
    environment = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    environment.pop("KAFKASEC_LOAD_PLUGINS", None)
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "7 passed" in finished.stdout, finished.stdout
