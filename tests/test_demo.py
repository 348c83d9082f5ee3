"""The README's first command runs this demo; it checks its own answers, so run it here too."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo.py"


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    # The demo uses the reference plugins through their entry points, as an installation would.
    env = dict(os.environ, KAFKASEC_LOAD_PLUGINS="groupfile,audit_jsonl")
    done = subprocess.run(
        [sys.executable, str(DEMO), "--dir", str(tmp_path / "demo")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "demo: all checks passed" in done.stdout
    assert "[FAIL]" not in done.stdout
    assert (tmp_path / "demo" / "state.db").exists()
