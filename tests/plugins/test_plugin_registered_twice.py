"""A plugin passed to KafkaSecurity (``plugins=[module]``) that the entry points loaded already is
registered once: the default install loads the reference plugins through their entry points, and
the docs show passing them as well."""

import importlib.util
import sys

import pytest

import kafkasec_tenant
from kafkasec import KafkaSecurity, hookimpl
from kafkasec.plugins import make_plugin_manager


@pytest.fixture
def entry_points_loaded(monkeypatch):
    """The default install: every entry-point plugin loaded (conftest loads none)."""
    monkeypatch.delenv("KAFKASEC_LOAD_PLUGINS")


def registered_tenant_modules(manager):
    return [plugin for plugin in manager.get_plugins() if getattr(plugin, "__name__", None) == "kafkasec_tenant"]


def test_a_module_the_entry_points_loaded_is_registered_once(entry_points_loaded):
    manager = make_plugin_manager(plugins=[kafkasec_tenant])
    assert registered_tenant_modules(manager) == [kafkasec_tenant]
    assert manager.get_name(kafkasec_tenant) == "tenant"  # under its entry-point name


def test_kafka_security_accepts_a_plugin_the_entry_points_loaded(entry_points_loaded):
    security = KafkaSecurity.from_config({"kafkasec.state.path": ":memory:"}, plugins=[kafkasec_tenant])
    try:
        assert registered_tenant_modules(security.plugin_manager) == [kafkasec_tenant]
    finally:
        security.close()


def test_the_same_module_imported_twice_is_registered_once(entry_points_loaded):
    # The same file under a second module object (two sys.path entries leading to it).
    spec = importlib.util.spec_from_file_location("kafkasec_tenant", kafkasec_tenant.__file__)
    second_copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(second_copy)
    assert second_copy is not kafkasec_tenant and sys.modules["kafkasec_tenant"] is kafkasec_tenant
    manager = make_plugin_manager(plugins=[second_copy])
    assert registered_tenant_modules(manager) == [kafkasec_tenant]


def test_the_same_object_passed_twice_is_registered_once():
    class Audit:
        @hookimpl
        def kafkasec_audit(self, security, context, decisions):
            return None

    plugin = Audit()
    manager = make_plugin_manager(plugins=[plugin, plugin])
    assert [registered for registered in manager.get_plugins() if registered is plugin] == [plugin]


def test_two_objects_of_one_class_are_two_plugins():
    class Audit:
        @hookimpl
        def kafkasec_audit(self, security, context, decisions):
            return None

    first, second = Audit(), Audit()
    manager = make_plugin_manager(plugins=[first, second])
    assert manager.is_registered(first) and manager.is_registered(second)
