"""The plugin manager: entry-point plugins first, then the built-in plugins.

Environment:
- ``KAFKASEC_LOAD_PLUGINS``: a comma-separated allow-list of entry-point names to load (empty:
  none). Unset: every plugin installed under the entry-point group "kafkasec" is loaded.
- ``KAFKASEC_TRACE_PLUGINS``: when set to anything but "" or "0", every hook call and result is
  written to standard error.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
import weakref

import pluggy

from kafkasec import hookspecs

ENTRY_POINT_GROUP = "kafkasec"

DEFAULT_PLUGINS = (
    "kafkasec.store.plugin",
    "kafkasec.authorizer.plugin",
    "kafkasec.principals.serde",
    "kafkasec.principals.builder",
    "kafkasec.protocol.builtin_apis",
    "kafkasec.scram.mechanism",
    "kafkasec.sasl.plain",
    "kafkasec.sasl.oauthbearer",
)


class PluginManager(pluggy.PluginManager):
    """pluggy's manager that tells its listeners when a plugin comes or goes, so that every
    KafkaSecurity sharing it looks again at which hooks have implementations (a hook nobody
    implements is skipped per request, and must stop being skipped the moment one does)."""

    def __init__(self, project_name: str = "kafkasec"):
        super().__init__(project_name)
        self._listeners: list[weakref.WeakMethod] = []
        self.tracing = False
        """Whether every hook call is traced (then no call may be skipped)."""

    def add_change_listener(self, method) -> None:
        """Call the bound ``method`` after every register and unregister, for as long as its
        object lives."""
        self._listeners.append(weakref.WeakMethod(method))

    def register(self, plugin, name=None):
        registered = super().register(plugin, name)
        self._tell_listeners()
        return registered

    def unregister(self, plugin=None, name=None):
        removed = super().unregister(plugin, name)
        self._tell_listeners()
        return removed

    def _tell_listeners(self) -> None:
        alive = []
        for reference in self._listeners:
            method = reference()
            if method is not None:
                alive.append(reference)
                method()
        self._listeners = alive


def make_plugin_manager(*, load_entrypoints: bool = True, plugins=()) -> PluginManager:
    """A plugin manager with entry-point plugins (subject to KAFKASEC_LOAD_PLUGINS), then
    ``plugins`` (modules or objects of yours; one the entry points loaded already is skipped), then
    the built-ins, checked with check_pending()."""
    manager = PluginManager("kafkasec")
    manager.add_hookspecs(hookspecs)
    if load_entrypoints:
        allowed = os.environ.get("KAFKASEC_LOAD_PLUGINS")
        if allowed is None:
            manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        else:
            for name in (part.strip() for part in allowed.split(",")):
                if name:
                    if not manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP, name=name):
                        raise ValueError(
                            f"KAFKASEC_LOAD_PLUGINS names {name!r}, but no installed plugin has that "
                            f"entry point in the {ENTRY_POINT_GROUP!r} group"
                        )
    for plugin in plugins:
        # A plugin installed with its entry point is loaded above already; passing it again (as
        # docs/plugins.md once showed) must not fail with pluggy's "already registered".
        if not _already_registered(manager, plugin):
            manager.register(plugin)
    for name in DEFAULT_PLUGINS:
        manager.register(importlib.import_module(name), name)
    manager.check_pending()
    if os.environ.get("KAFKASEC_TRACE_PLUGINS", "") not in ("", "0"):
        enable_tracing(manager)
    return manager


def _already_registered(manager: pluggy.PluginManager, plugin) -> bool:
    """Whether ``plugin`` is registered, as that object or as a module of the same name (the
    same file imported twice under two ``sys.path`` entries would answer every hook twice)."""
    if manager.is_registered(plugin):
        return True
    if isinstance(plugin, types.ModuleType):
        return any(isinstance(registered, types.ModuleType) and registered.__name__ == plugin.__name__
                   for registered in manager.get_plugins())
    return False


def answers_by_plugin(caller: pluggy.HookCaller, **arguments):
    """Call each implementation of a collecting hook on its own, in pluggy's call order (plugins
    before ``trylast`` built-ins), yielding ``(hookimpl, answer)``: for hooks whose answers are
    kept per plugin (contributed ACLs, API handlers)."""
    for impl in reversed(caller.get_hookimpls()):
        yield impl, impl.function(*(arguments[name] for name in impl.argnames))


def enable_tracing(manager: pluggy.PluginManager, write=None) -> None:
    """Write each hook call and its result (to standard error unless ``write`` is given)."""
    manager.trace.root.setwriter(write or (lambda text: sys.stderr.write(text)))
    manager.enable_tracing()
    if isinstance(manager, PluginManager):
        manager.tracing = True
        manager._tell_listeners()
