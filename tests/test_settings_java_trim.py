"""Kafka's settings are trimmed with Java's String.trim(), never Python's str.strip().

Java's trim removes every character up to U+0020 at either end and nothing else; Python's
strip removes Unicode whitespace and keeps most control characters. Where the two differ, a
setting must read as Kafka reads it: super.users (StandardAuthorizer.getConfiguredSuperUsers),
allow.everyone.if.no.acl.found and other booleans (ConfigDef BOOLEAN), numbers (INT, LONG),
strings (STRING) and lists (LIST, split at commas with ASCII whitespace around them).
"""

import pytest
from hypothesis import given, settings, strategies as st

from kafkasec import (
    Action,
    AuthorizationResult,
    KafkaPrincipal,
    KafkaSecurity,
    RequestContext,
    ResourcePattern,
    StandardAuthorizer,
)
from kafkasec.authorizer.standard import parse_super_users
from kafkasec.protocol.forwarding import privileged_listeners
from kafkasec.settings import java_trim, parse_bool, parse_count, parse_list

ALLOW_EVERYONE = "allow.everyone.if.no.acl.found"

# What Java's trim removes, and the characters on which it and str.strip() disagree: controls
# that strip keeps (U+0000-U+0008, U+000E-U+001B) and Unicode whitespace above U+0020 that
# strip removes (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
JAVA_TRIMMED = [chr(code) for code in range(0x21)]
DISAGREEING = [char for char in map(chr, range(0x110000)) if (char <= " ") != char.isspace()]
ENDS = st.text(st.sampled_from(sorted(set(JAVA_TRIMMED) | set(DISAGREEING))), max_size=3)
java_settings = settings(max_examples=300, deadline=None)


def java_trimmed(text: str) -> str:
    """The oracle: what String.trim() leaves, written apart from java_trim."""
    return text.strip("".join(JAVA_TRIMMED))


def test_the_disagreeing_characters_are_the_ones_named():
    assert "\x00" in DISAGREEING and "\x1b" in DISAGREEING and "\x1c" not in DISAGREEING
    assert {"\x85", "\xa0", "\u2003", "\u3000"} <= set(DISAGREEING)
    assert len(DISAGREEING) == 23 + 19  # 23 controls strip keeps, 19 whitespace above U+0020


@java_settings
@given(ENDS, st.text(max_size=4), ENDS)
def test_java_trim_is_javas(head, middle, tail):
    text = head + middle + tail
    assert java_trim(text) == java_trimmed(text)


@java_settings
@given(ENDS, st.sampled_from(["true", "TRUE", "False", "false"]), ENDS)
def test_a_boolean_is_trimmed_as_java_trims_it(head, word, tail):
    value = head + word + tail
    if all(char <= " " for char in head + tail):
        assert parse_bool(ALLOW_EVERYONE, value) is (word.lower() == "true")
    else:
        # Kafka reads "true\xa0" as false; kafkasec refuses what is not true or false
        # (docs/authorization.md, "Where we differ from Kafka on purpose").
        with pytest.raises(ValueError, match=f"{ALLOW_EVERYONE} must be true or false"):
            parse_bool(ALLOW_EVERYONE, value)


@java_settings
@given(ENDS, st.sampled_from(["User:carol", "User:bob", "Us:er:dave"]), ENDS, ENDS)
def test_super_users_are_trimmed_as_java_trims_them(head, principal, tail, other):
    value = f"{head}{principal}{tail};{other};User:admin"
    expected = {java_trimmed(f"{head}{principal}{tail}"), "User:admin"} | ({java_trimmed(other)} - {""})
    if any(":" not in user for user in expected):
        with pytest.raises(ValueError):
            parse_super_users(value)
        return
    assert parse_super_users(value) == expected
    authorizer = StandardAuthorizer(super_users=value)
    # No ACL and allow.everyone off: only a super user is allowed.
    [result] = authorizer.authorize(RequestContext.for_principal(principal), [Action("READ", ResourcePattern("TOPIC", "t"))])
    assert (result is AuthorizationResult.ALLOWED) == (java_trimmed(head + principal + tail) == principal)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("\x01true", True),  # Kafka: true; str.strip() kept the \x01 and refused it
        ("\x00false\x1b", False),
        (" TRUE\t", True),
        ("falſe", False),  # Java's equalsIgnoreCase: U+017F upper-cases to S
    ],
)
def test_booleans_kafka_reads(value, expected):
    assert parse_bool(ALLOW_EVERYONE, value) is expected


@pytest.mark.parametrize("value", ["true\xa0", "\u2003true", "\x85false", "true\u3000", "yes", "1"])
def test_booleans_kafka_does_not_read_as_true_are_refused(value):
    with pytest.raises(ValueError, match="must be true or false"):
        parse_bool(ALLOW_EVERYONE, value)


def test_the_issues_settings_through_kafka_security():
    config = {"super.users": "User:carol\x00;\x85User:bob", ALLOW_EVERYONE: "\x01true"}
    with KafkaSecurity.from_config(config) as security:
        assert security.authorizer.super_users == {"User:carol", "\x85User:bob"}
        assert security.authorizer.allow_everyone_if_no_acl_found is True
    with pytest.raises(ValueError, match=f"{ALLOW_EVERYONE} must be true or false"):
        KafkaSecurity.from_config({ALLOW_EVERYONE: "true\xa0"})


def test_a_super_user_given_as_a_principal_is_not_trimmed():
    assert parse_super_users([KafkaPrincipal("User", "bob\x00"), " User:carol\x01"]) == {"User:bob\x00", "User:carol"}


@pytest.mark.parametrize(
    "value, expected",
    [
        ("\x015\x1f", 5),
        (" 42 ", 42),
        (7, 7),
    ],
)
def test_numbers_kafka_reads(value, expected):
    assert parse_count({"n": value}, "n", 0) == expected


@pytest.mark.parametrize("value", ["5\xa0", "\u20035", "1_000", "5 5", "-1", "", True])
def test_numbers_kafka_refuses(value):
    with pytest.raises(ValueError, match="n must be a whole number"):
        parse_count({"n": value}, "n", 0)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("\x01a , b\t,\x0bc\x00", ["a", "b", "c"]),
        ("a\xa0, b", ["a\xa0", "b"]),  # U+00A0 is no whitespace to Java's \s
        ("a,\x01b", ["a", "\x01b"]),  # only whole values are trimmed, items are not
        ("a,,b,", ["a", "", "b", ""]),
        (" \x00 ", []),
        (["x ", "y"], ["x ", "y"]),
    ],
)
def test_lists_as_configdef_splits_them(value, expected):
    assert parse_list(value) == expected


def test_privileged_listeners_read_kafkas_string_and_list():
    config = {"inter.broker.listener.name": "\x00BROKER\x1b", "controller.listener.names": "CONTROLLER\xa0 ,\x01X,"}
    assert privileged_listeners(config) == {"BROKER", "CONTROLLER\xa0", "\x01X"}
