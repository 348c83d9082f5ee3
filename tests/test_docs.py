"""The docs are part of the product: README examples run, and every hook is documented (hook_coverage.py
checks at run time that every hook is called on a plugin by some test)."""

import re
from pathlib import Path

import pytest

from kafkasec import hookspecs

ROOT = Path(__file__).resolve().parent.parent
HOOKS = sorted(name for name in dir(hookspecs) if name.startswith("kafkasec_"))


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("number", range(len(python_blocks(ROOT / "README.md"))))
def test_readme_examples_run(number):
    exec(compile(python_blocks(ROOT / "README.md")[number], f"README.md block {number}", "exec"), {})


RUNNABLE_PAGES = [
    "docs/authentication.md",
    "docs/authorization.md",
    "docs/principals.md",
    "docs/forwarding.md",
    "docs/scram.md",
    "docs/tokens.md",
    pytest.param("docs/grids.md", marks=pytest.mark.slow),  # starts Spark
    "docs/embedding.md",
    "docs/request-authorization.md",
]


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_capability_page_examples_run(page):
    blocks = python_blocks(ROOT / page)
    assert blocks, f"{page} has no python example"
    for number, block in enumerate(blocks):
        exec(compile(block, f"{page} block {number}", "exec"), {})


def test_the_hook_reference_names_exactly_the_hooks_a_plugin_manager_offers():
    from kafkasec.plugins import make_plugin_manager

    offered = sorted(name for name in vars(make_plugin_manager().hook) if name.startswith("kafkasec_"))
    reference = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    documented = sorted(re.findall(r"^## (kafkasec_\w+)", reference, flags=re.MULTILINE))
    assert HOOKS == offered == documented
    assert python_blocks(ROOT / "README.md")


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented(hook):
    reference = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    assert f"## {hook}" in reference, f"docs/hooks.md has no section for {hook}"
    assert getattr(hookspecs, hook).__doc__, f"{hook} has no docstring in hookspecs.py"


def test_readme_commands_match_ci():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = next(line for line in readme.splitlines() if line.endswith("python -m pytest"))
    assert test_command in ci
