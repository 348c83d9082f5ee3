"""The settings registry: every setting kafkasec reads is known, misspellings are refused."""

import json

import pytest

from kafkasec import KafkaSecurity, hookimpl
from kafkasec.cli import main
from kafkasec.plugins import make_plugin_manager
from kafkasec.settings import BUILTIN_SETTINGS, Setting, SettingsRegistry


class PolicyPlugin:
    @hookimpl
    def kafkasec_settings(self):
        return (Setting("kafkasec.policy.path", "string", None, "policy", "the policy file"),
                Setting("kafkasec.policy.strict", "boolean", False, "policy", "refuse unknown rules"))


@pytest.mark.parametrize(
    "config, message",
    [
        ({"super.user": "User:a"}, "unknown setting super.user; did you mean super.users?"),
        ({"allow.everyone.if.no.acl.founds": "true"}, "did you mean allow.everyone.if.no.acl.found"),
        ({"kafkasec.state.pth": ":memory:"}, "did you mean kafkasec.state.path"),
        ({"kafkasec.nothing.like.this": "1"}, "unknown setting kafkasec.nothing.like.this"),
        ({"allow.everyone.if.no.acl.found": "yes"}, "allow.everyone.if.no.acl.found must be true or false"),
        ({"kafkasec.state.write.lock.timeout.ms": "-5"}, "kafkasec.state.write.lock.timeout.ms must be a whole number"),
        ({"kafkasec.tenant.enable": "true"}, "did you mean kafkasec.tenant.enabled"),
    ],
)
def test_a_misspelt_or_ill_kinded_setting_is_refused_before_anything_opens(tmp_path, config, message):
    state = tmp_path / "state.db"
    with pytest.raises(ValueError, match=message.replace("?", r"\?")):
        KafkaSecurity.from_config({"kafkasec.state.path": str(state), **config}, plugins=[_tenant()])
    assert not state.exists()


def _tenant():
    import kafkasec_tenant

    return kafkasec_tenant


def test_a_brokers_own_settings_pass_untouched():
    config = {"log.dirs": "/var/kafka", "num.partitions": "3", "listeners": "PLAINTEXT://:9092"}
    with KafkaSecurity.from_config({**config, "super.users": "User:admin"}) as security:
        assert security.config["log.dirs"] == "/var/kafka"


def test_a_plugin_declares_its_settings_through_the_hook():
    with pytest.raises(ValueError, match="unknown setting kafkasec.policy.path"):
        KafkaSecurity.from_config({"kafkasec.policy.path": "/etc/p"})
    with KafkaSecurity.from_config({"kafkasec.policy.path": "/etc/p"}, plugins=[PolicyPlugin()]) as security:
        assert security.settings.settings["kafkasec.policy.path"].owner == "policy"
    with pytest.raises(ValueError, match="kafkasec.policy.strict must be true or false"):
        KafkaSecurity.from_config({"kafkasec.policy.strict": "1"}, plugins=[PolicyPlugin()])


@pytest.mark.parametrize(("kind", "given", "value"), [
    ("string", " /etc/policy\t", "/etc/policy"),
    ("password", " secret ", "secret"),
    ("boolean", "TRUE", True),
    ("count", " 12 ", 12),
    ("milliseconds", 250, 250),
    ("list", "User:alice, User:bob", ["User:alice", "User:bob"]),
    ("list", ["User:alice"], ["User:alice"]),
    ("list", "", []),
])
def test_a_plugin_reads_its_setting_parsed_by_its_kind(kind, given, value):
    setting = Setting("kafkasec.policy.value", kind, None, "policy", "a value")
    assert setting.value({setting.name: given}) == value


def test_a_setting_left_out_is_its_default_parsed_and_none_without_one():
    listed = Setting("kafkasec.policy.principals", "list", "User:alice,User:bob", "policy", "principals")
    assert listed.value({}) == listed.value({listed.name: None}) == ["User:alice", "User:bob"]
    assert Setting("kafkasec.policy.path", "string", None, "policy", "the policy file").value({}) is None


def test_two_owners_of_one_name_are_refused():
    clash = Setting("super.users", "list", None, "someone", "not the same")
    with pytest.raises(ValueError, match="registered twice"):
        SettingsRegistry([*BUILTIN_SETTINGS, clash])


def test_every_setting_a_module_names_is_registered():
    from kafkasec import security, settings
    from kafkasec.principals import builder
    from kafkasec.server import endpoint, limits
    from kafkasec.store import LOG_RETENTION_RECORDS, POLL_INTERVAL_MS, WRITE_LOCK_TIMEOUT_MS
    from kafkasec.tokens import manager

    named = {
        security.SUPER_USERS, security.ALLOW_EVERYONE_IF_NO_ACL_FOUND, security.STATE_PATH, security.STATE_URL,
        security.FAILED_AUTHENTICATION_DELAY_MS, settings.INTER_BROKER_LISTENER_NAME, settings.CONTROLLER_LISTENER_NAMES,
        builder.SSL_PRINCIPAL_MAPPING_RULES, builder.SASL_KERBEROS_PRINCIPAL_TO_LOCAL_RULES, builder.KERBEROS_DEFAULT_REALM,
        endpoint.MAX_REQUEST_BYTES, endpoint.MAX_SASL_RECEIVE_BYTES, endpoint.IDLE_TIMEOUT_MS,
        endpoint.SASL_ENABLED_MECHANISMS, endpoint.IO_THREADS, limits.MAX_CONNECTIONS, limits.MAX_CONNECTIONS_PER_IP,
        limits.MAX_CONNECTIONS_PER_IP_OVERRIDES, limits.UNAUTHENTICATED_MAX_BYTES,
        LOG_RETENTION_RECORDS, POLL_INTERVAL_MS, WRITE_LOCK_TIMEOUT_MS,
        manager.SECRET_KEY, manager.MAX_LIFETIME_MS, manager.EXPIRY_TIME_MS, manager.EXPIRY_CHECK_INTERVAL_MS,
        manager.PREVIOUS_SECRET_KEYS,
    }
    registered = SettingsRegistry.from_plugins(make_plugin_manager(load_entrypoints=False)).settings
    assert named <= set(registered), named - set(registered)
    defaults = {s.name: s.default for s in BUILTIN_SETTINGS}
    assert defaults[endpoint.MAX_REQUEST_BYTES] == endpoint.DEFAULT_MAX_REQUEST_BYTES
    assert defaults[limits.UNAUTHENTICATED_MAX_BYTES] == limits.DEFAULT_UNAUTHENTICATED_MAX_BYTES
    assert defaults[manager.MAX_LIFETIME_MS] == manager.DEFAULT_MAX_LIFETIME_MS


def test_config_describe_lists_every_setting(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["config", "--describe", "-o", "json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert {s.name for s in BUILTIN_SETTINGS} <= set(listed)
    assert listed["delegation.token.secret.key"]["default"] == "(none)"
    assert listed["super.users"]["owner"] == "kafkasec.security"
    assert not list(tmp_path.iterdir())  # describing writes no state


def test_config_check_names_the_misspelling(tmp_path, capsys):
    good = tmp_path / "good.properties"
    good.write_text("super.users=User:admin\nlog.dirs=/tmp/x\n")
    bad = tmp_path / "bad.properties"
    bad.write_text("super.users=User:admin\nkafkasec.state.pat=x.db\n")
    assert main(["config", "--check", "--command-config", str(good)]) == 0
    assert main(["config", "--check", "--command-config", str(bad)]) == 1
    assert "did you mean kafkasec.state.path?" in capsys.readouterr().err
    assert main(["config", "--check"]) == 1
