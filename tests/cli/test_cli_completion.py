"""``kafkasec completion bash``: the script completes commands, options and subcommands in bash."""

import shutil
import subprocess
import sys

import pytest

from kafkasec.cli import build_parser
from kafkasec.cli.completion import bash_script

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def complete(*words: str) -> list[str]:
    """What bash offers for the last of ``words`` (the word being typed), with the script loaded."""
    script = subprocess.run([sys.executable, "-m", "kafkasec.cli", "completion", "bash"], capture_output=True,
                            text=True, check=True).stdout
    line = " ".join(f"'{word}'" for word in ("kafkasec", *words))
    probe = f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; _kafkasec; printf "%s\\n" "${{COMPREPLY[@]}}"'
    return subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()


def test_commands_options_and_subcommands_are_completed():
    assert complete("ac") == ["acls"]
    assert complete("acls", "--li") == ["--list"]
    assert complete("--state", "s.db", "acls", "who") == ["who-can"]
    assert complete("tokens", "--desc") == ["--describe"]
    assert "--overwrite" in complete("grid", "--")


def test_the_script_lists_only_options_the_parser_has():
    script = bash_script(build_parser())
    assert "--bootstrap-server" in script and "--bootstrap-controller" not in script and "--opertion" not in script
    assert "complete -o default -F _kafkasec kafkasec" in script
