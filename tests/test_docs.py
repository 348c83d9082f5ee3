"""The docs are part of the product: every Python and shell block of README.md and docs/*.md runs,
and every hook is documented (hook_coverage.py checks at run time that every hook is called on a
plugin by some test).

Blocks run as a user would run them: with the default install's entry-point plugins loaded (the
suite's conftest loads none, so KAFKASEC_LOAD_PLUGINS is removed here), in an empty directory of
their own, with examples/ importable (pyproject's pythonpath; a reader sets PYTHONPATH=examples). Python blocks (```python) are executed, each in a fresh namespace. Shell blocks
(```sh, ```bash, ```shell) run in ``bash -e``; in a ```console block, the ``$ `` lines are the
commands (a line ending in ``\\`` goes on) and the rest is output, not checked here. Every shell
block has SHELL_TIMEOUT_S to finish, and whatever it started in the background is stopped after.

A block that cannot run as it stands says so in an HTML comment on the line just above its fence:

    <!-- docs-test: skip REASON -->   not run; the test is reported as skipped with REASON. For a
                                      synopsis (``[--option]`` parts), placeholders such as
                                      ``<HMAC>``, a password prompt, or a service the block expects
                                      to be running (a cluster at localhost:9092, a Spark master,
                                      Tansu). Say in REASON which test runs the same thing instead.
    <!-- docs-test: slow -->          run, under the ``slow`` marker (it starts Spark, say).
    <!-- docs-test: ports P1 P2 ... -->  run with these fixed ports (a server's, as a reader would
                                      type them) moved to free ones, all by one offset, so that the
                                      differences between them hold (a gateway's listener for
                                      broker N is its port + 1 + N) and the block runs beside
                                      anything else on the machine.
"""

import os
import random
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasec import hookspecs

ROOT = Path(__file__).resolve().parent.parent
HOOKS = sorted(name for name in dir(hookspecs) if name.startswith("kafkasec_"))
PAGES = ["README.md", *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").glob("*.md"))]
PYTHON = ("python",)
SHELL = ("sh", "bash", "shell", "console")
SHELL_TIMEOUT_S = 60
MOVED_PORTS = range(10_000, 32_000)
"""Where a block's ports are moved to: below Linux's ephemeral ports (32768 and up), which the
kernel hands to outgoing connections and to servers on port 0."""

BLOCK = re.compile(r"(?:^<!-- docs-test: (?P<marker>.*?) -->\n)?^```(?P<language>\w*)\n(?P<code>.*?)^```",
                   flags=re.MULTILINE | re.DOTALL)



def blocks(page, languages):
    """(line, language, marker, code) of each block of ``page`` in one of ``languages``."""
    text = (ROOT / page).read_text(encoding="utf-8")
    for match in BLOCK.finditer(text):
        if match["language"] in languages:
            yield text.count("\n", 0, match.start("code")), match["language"], match["marker"], match["code"]


def block_params(languages):
    params = []
    for page in PAGES:
        for line, language, marker, code in blocks(page, languages):
            marks, ports = [], ()
            if marker is not None:
                kind, _, reason = marker.partition(" ")
                if kind == "skip":
                    assert reason, f"{page}:{line}: 'docs-test: skip' needs a reason"
                    marks.append(pytest.mark.skip(reason=f"{page}:{line}: {reason}"))
                elif kind == "slow":
                    marks.append(pytest.mark.slow)
                elif kind == "ports":
                    ports = tuple(int(port) for port in reason.split())
                    assert ports, f"{page}:{line}: 'docs-test: ports' needs the ports"
                else:
                    raise ValueError(f"{page}:{line}: unknown docs-test marker {marker!r}")
            params.append(pytest.param(page, line, language, code, ports, id=f"{page}:{line}", marks=marks))
    return params


@pytest.fixture
def as_a_user(tmp_path, monkeypatch):
    """An empty working directory and the default install's plugins."""
    monkeypatch.delenv("KAFKASEC_LOAD_PLUGINS", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def on_free_ports(code: str, ports: tuple[int, ...]) -> str:
    """``code`` with each of ``ports`` moved by one offset to a port that is free now."""
    if not ports:
        return code
    for _ in range(100):
        offset = random.randrange(MOVED_PORTS.start - min(ports), MOVED_PORTS.stop - max(ports))
        if all(_is_free(port + offset) for port in ports):
            break
    else:
        raise RuntimeError(f"no free ports for {ports} after 100 tries")
    # Whole numbers only: 9092 is moved, the 9092 in 19092 is not.
    return re.sub(r"\b(?:" + "|".join(map(str, ports)) + r")\b", lambda match: str(int(match[0]) + offset), code)


def _is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize(("page", "line", "language", "code", "ports"), block_params(PYTHON))
def test_python_blocks_run(page, line, language, code, ports, as_a_user):
    exec(compile(on_free_ports(code, ports), f"{page} block at line {line}", "exec"), {"__name__": "__main__"})


def console_commands(code):
    """The commands of a console block: its ``$ `` lines, with their continuation lines."""
    commands, continuing = [], False
    for text in code.splitlines():
        if text.startswith("$ ") or continuing:
            commands.append(text[2:] if text.startswith("$ ") and not continuing else text)
            continuing = text.endswith("\\")
    return "\n".join(commands) + "\n"


@pytest.mark.parametrize(("page", "line", "language", "code", "ports"), block_params(SHELL))
def test_shell_blocks_run(page, line, language, code, ports, as_a_user):
    script = on_free_ports(console_commands(code) if language == "console" else code, ports)
    environment = dict(os.environ)
    # The kafkasec command of this interpreter's installation comes first.
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment["PATH"]])
    process = subprocess.Popen(["bash", "-e", "-c", script], cwd=as_a_user, env=environment, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=SHELL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        out, err = "", f"did not finish within {SHELL_TIMEOUT_S} s"
    finally:
        # Whatever the block left running (a server started with &) ends with it.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    assert process.returncode == 0, f"{page} block at line {line} failed:\n{script}\n--- stdout\n{out}\n--- stderr\n{err}"


def test_the_blocks_are_found():
    """Guards the parser: a pattern for the fences that found nothing would pass every test above."""
    assert any(marker is None for _, _, marker, _ in blocks("README.md", PYTHON))
    assert sum(1 for page in PAGES for _ in blocks(page, PYTHON + SHELL)) > 60


def test_the_hook_reference_names_exactly_the_hooks_a_plugin_manager_offers():
    from kafkasec.plugins import make_plugin_manager

    offered = sorted(name for name in vars(make_plugin_manager().hook) if name.startswith("kafkasec_"))
    reference = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    documented = sorted(re.findall(r"^## (kafkasec_\w+)", reference, flags=re.MULTILINE))
    assert HOOKS == offered == documented


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented(hook):
    reference = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    assert f"## {hook}" in reference, f"docs/hooks.md has no section for {hook}"
    assert getattr(hookspecs, hook).__doc__, f"{hook} has no docstring in hookspecs.py"


def test_embedding_lists_every_security_line_of_the_example_broker():
    """docs/embedding.md's line-by-line list is exactly the lines examples/embedded_broker.py marks
    ``# security``, in order, and there are at most ten (the issue's target)."""
    source = (ROOT / "examples" / "embedded_broker.py").read_text(encoding="utf-8")
    marked = [line.rsplit("  # security", 1)[0].strip() for line in source.splitlines() if line.endswith("  # security")]
    page = (ROOT / "docs" / "embedding.md").read_text(encoding="utf-8")
    section = page.split("### Its security, line by line\n", 1)[1].split("\n### ", 1)[0]
    listed = re.findall(r"^\d+\. `(.+?)`", section, flags=re.MULTILINE)
    assert listed == marked
    assert 0 < len(marked) <= 10


def test_readme_commands_match_ci():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = next(line for line in readme.splitlines() if line.endswith("python -m pytest"))
    assert test_command in ci
