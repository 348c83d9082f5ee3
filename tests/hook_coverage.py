"""A pytest plugin that checks at run time that every kafkasec hook is called, by some test, on an
implementation that is not a built-in: a hook no test drives through a plugin of its own is a
hook whose contract nobody checks.

Every kafkasec plugin manager made during the run records the hooks its non-built-in plugins
answer (through pluggy's call or ``kafkasec.plugins.answers_by_plugin``, which calls the
implementation itself). When the whole suite has run and passed, a hook missing from the record
fails the run.
"""

from __future__ import annotations

import functools

import pluggy
import pytest

from kafkasec import hookspecs
from kafkasec.plugins import DEFAULT_PLUGINS

HOOKS = frozenset(name for name in dir(hookspecs) if name.startswith("kafkasec_"))
exercised: set[str] = set()


def _recorded(hook_name, function, wrapper):
    if wrapper:  # a wrapper must stay a generator function for pluggy

        @functools.wraps(function)
        def generator(*arguments):
            exercised.add(hook_name)
            return (yield from function(*arguments))

        return generator

    @functools.wraps(function)
    def plain(*arguments):
        exercised.add(hook_name)
        return function(*arguments)

    return plain


_register = pluggy.PluginManager.register


def _register_recording(self, plugin, name=None):
    registered_name = _register(self, plugin, name)
    if self.project_name == "kafkasec" and registered_name is not None and registered_name not in DEFAULT_PLUGINS:
        for caller in self.get_hookcallers(plugin) or ():
            for implementation in caller.get_hookimpls():
                if implementation.plugin is plugin:
                    is_wrapper = implementation.wrapper or implementation.hookwrapper
                    implementation.function = _recorded(caller.name, implementation.function, is_wrapper)
    return registered_name


def pytest_configure(config) -> None:
    pluggy.PluginManager.register = _register_recording


def pytest_unconfigure(config) -> None:
    pluggy.PluginManager.register = _register


def _ran_the_whole_suite(session: pytest.Session, exitstatus) -> bool:
    config = session.config
    return (
        config.args_source == pytest.Config.ArgsSource.TESTPATHS
        and not config.option.keyword
        and not config.option.markexpr
        and not getattr(config.option, "lf", False)  # absent under -p no:cacheprovider
        and exitstatus == pytest.ExitCode.OK
    )


unexercised: list[str] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
    if _ran_the_whole_suite(session, exitstatus):
        unexercised.extend(sorted(HOOKS - exercised))
        if unexercised:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if unexercised:
        terminalreporter.write_line(
            "FAILED hook coverage: no test calls a plugin's implementation of " + ", ".join(unexercised), red=True
        )
