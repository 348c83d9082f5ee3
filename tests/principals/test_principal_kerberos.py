"""sasl.kerberos.principal.to.local.rules, checked against Kafka's KerberosNameTest and
KerberosRuleTest."""

import pytest
from hypothesis import given, strategies as st

from kafkasec.principals.kerberos import KerberosName, KerberosRule, KerberosShortNamer, replace_parameters
from kafkasec.principals.mapping_rules import NoMatchingRule


def short(namer, name):
    return namer.short_name(KerberosName.parse(name))


# ---------------------------------------------------------------- Kafka's KerberosNameTest


def test_parse():
    namer = KerberosShortNamer.parse(
        [r"RULE:[1:$1](App\..*)s/App\.(.*)/$1/g", r"RULE:[2:$1](App\..*)s/App\.(.*)/$1/g", "DEFAULT"],
        "REALM.COM",
    )
    name = KerberosName.parse("App.service-name/example.com@REALM.COM")
    assert (name.service_name, name.host_name, name.realm) == ("App.service-name", "example.com", "REALM.COM")
    assert namer.short_name(name) == "service-name"

    name = KerberosName.parse("App.service-name@REALM.COM")
    assert (name.service_name, name.host_name, name.realm) == ("App.service-name", None, "REALM.COM")
    assert namer.short_name(name) == "service-name"

    name = KerberosName.parse("user/host@REALM.COM")
    assert (name.service_name, name.host_name, name.realm) == ("user", "host", "REALM.COM")
    assert namer.short_name(name) == "user"


@pytest.mark.parametrize("case, convert", [("L", str.lower), ("U", str.upper)])
def test_to_lower_and_upper_case(case, convert):
    namer = KerberosShortNamer.parse(
        [
            f"RULE:[1:$1]/{case}",
            f"RULE:[2:$1](Test.*)s/ABC///{case}",
            f"RULE:[2:$1](ABC.*)s/ABC/XYZ/g/{case}",
            rf"RULE:[2:$1](App\..*)s/App\.(.*)/$1/g/{case}",
            f"RULE:[2:$1]/{case}",
            "DEFAULT",
        ],
        "REALM.COM",
    )
    assert short(namer, "User@REALM.COM") == convert("user")
    assert short(namer, "TestABC/host@FOO.COM") == convert("test")
    assert short(namer, "ABC_User_ABC/host@FOO.COM") == convert("xyz_user_xyz")
    assert short(namer, "App.SERVICE-name/example.com@REALM.COM") == convert("service-name")
    assert short(namer, "User/root@REALM.COM") == convert("user")


@pytest.mark.parametrize(
    "rule",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/g",
        "rule:[1:$1]",
        "rule:[1:$1]/L/U",
        "rule:[1:$1]/U/L",
        "rule:[1:$1]/LU",
        "RULE:[1:$1/L",
        "RULE:[1:$1]/l",
        "RULE:[2:$1](ABC.*)s/ABC/XYZ/L/g",
    ],
)
def test_invalid_rules(rule):
    with pytest.raises(ValueError, match="invalid rule"):
        KerberosShortNamer.parse([rule], "REALM.COM")


# ---------------------------------------------------------------- Kafka's KerberosRuleTest


def test_replace_parameters():
    many = ["too", "many", "parameters", "are", "ok"]
    assert replace_parameters("", []) == ""
    assert replace_parameters("hello", []) == "hello"
    assert replace_parameters("", many) == ""
    assert replace_parameters("hello", many) == "hello"
    assert replace_parameters("hello $0", many) == "hello too"
    assert replace_parameters("hello $0", ["no recursion $1"]) == "hello no recursion $1"
    with pytest.raises(ValueError, match="outside of the valid range"):
        replace_parameters("$0", [])
    with pytest.raises(ValueError, match="bad format"):
        replace_parameters("hello $a", ["does not matter"])


# ---------------------------------------------------------------- beyond Kafka's tests


def test_names_without_a_realm_are_already_short():
    namer = KerberosShortNamer.parse([], "REALM.COM")
    assert short(namer, "alice") == "alice"
    assert short(namer, "alice/host") == "alice/host"  # no "@": Kafka keeps the whole text
    assert KerberosName.parse("alice/host") == KerberosName("alice/host")
    with pytest.raises(NoMatchingRule, match=r"No rules apply to alice@REALM.COM, rules \[\]"):
        short(namer, "alice@REALM.COM")


def test_default_rule_needs_the_default_realm():
    namer = KerberosShortNamer.parse(["DEFAULT"], "EXAMPLE.COM")
    assert short(namer, "kafka/broker1.example.com@EXAMPLE.COM") == "kafka"
    with pytest.raises(NoMatchingRule, match=r"No rules apply to alice@OTHER.COM, rules \[DEFAULT\]"):
        short(namer, "alice@OTHER.COM")
    # With no krb5.conf Kafka's default realm is "": only names with an empty realm are mapped.
    assert short(KerberosShortNamer.parse(), "alice@") == "alice"


def test_kafka_documentation_example():
    namer = KerberosShortNamer.parse(["RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//", "DEFAULT"], "EXAMPLE.COM")
    assert short(namer, "alice@MYDOMAIN.COM") == "alice"
    assert short(namer, "bob@EXAMPLE.COM") == "bob"


def test_format_match_and_substitution():
    namer = KerberosShortNamer.parse(
        ["RULE:[2:$1-$2@$0](.*-db.*)s/-.*//", "RULE:[2:$2_$1]s/[.]/_/g", r"RULE:[1:$1](\w+)s/(\w)/X$1/"], "R"
    )
    assert short(namer, "svc/db1.host@R") == "svc"
    assert short(namer, "svc/a.b.c@R") == "a_b_c_svc"
    assert short(namer, "abc@R") == "Xabc"  # without "g", only the first match is replaced


def test_a_short_name_with_slash_or_at_is_refused():
    namer = KerberosShortNamer.parse(["RULE:[2:$1/$2]", "DEFAULT"], "R")
    with pytest.raises(NoMatchingRule, match=r"Non-simple name a/h after auth_to_local rule RULE:\[2:\$1/\$2\]"):
        short(namer, "a/h@R")


def test_rule_text_round_trips():
    rules = ["DEFAULT", "RULE:[1:$1]", "RULE:[2:$1@$0](.*)s/a/b/g/L", "RULE:[1:$1]s/x//", "RULE:[1:$1](x)/U"]
    namer = KerberosShortNamer.parse(rules, "R")
    assert [str(rule) for rule in namer.rules] == rules
    assert str(namer) == f"KerberosShortNamer(principalToLocalRules = [{', '.join(rules)}])"


@pytest.mark.parametrize(
    "rule, reason",
    [
        ("RULE:[1:$2]", "refers to \\$2"),  # Kafka: BadFormatString on every one-component name
        ("RULE:[1:$a]", "bad format"),
        ("RULE:[1:$]", "bad format"),
        ("RULE:[:$1]", "not a number of components"),
        ("RULE:[99999999999:$1]", "not a number of components"),
        ("RULE:[1:$1](\\p{L}+)", "Unicode properties"),
        ("RULE:[1:$1]s/(a/b/", "Unclosed group"),
        ("RULE:[1:$1]s/(a)/$2/", "refers to group 2"),  # Kafka: IndexOutOfBoundsException when applied
        ("", "invalid rule ''"),
    ],
)
def test_bad_rules_fail_when_parsed_and_quote_the_rule(rule, reason):
    with pytest.raises(ValueError, match=reason) as failure:
        KerberosShortNamer.parse([rule])
    assert repr(rule) in str(failure.value)


def test_malformed_names_and_values():
    with pytest.raises(ValueError, match="Malformed Kerberos name: a@b@c"):
        KerberosName.parse("a@b@c")
    with pytest.raises(ValueError, match="Malformed Kerberos name"):
        KerberosName.parse("a/b/c@R")
    with pytest.raises(ValueError, match="needs a realm"):
        KerberosName("a", "host")
    with pytest.raises(TypeError):
        KerberosShortNamer.parse("DEFAULT")
    with pytest.raises(ValueError, match="DEFAULT rule takes no"):
        KerberosRule(format="$1")
    assert KerberosRule().is_default and not KerberosRule.parse("RULE:[1:$1]").is_default
    assert str(KerberosName.parse("a/b@R")) == "a/b@R"


_COMPONENT = st.text(st.characters(blacklist_characters="/@", blacklist_categories=("Cs",)))


@given(_COMPONENT, _COMPONENT, _COMPONENT)
def test_parse_round_trips_and_default_keeps_the_first_component(service, host, realm):
    name = KerberosName.parse(f"{service}/{host}@{realm}")
    assert name == KerberosName(service, host, realm) and str(name) == f"{service}/{host}@{realm}"
    assert KerberosShortNamer.parse(["DEFAULT"], realm).short_name(name) == service
