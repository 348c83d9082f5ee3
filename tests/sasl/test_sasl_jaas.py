"""sasl.jaas.config values, read as Kafka's JaasConfig reads them (cases from JaasContextTest)."""

import pytest
from hypothesis import given, strategies as st

from kafkasec.sasl.jaas import jaas_config_key, parse_jaas_config

MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_a_module_its_flag_and_options():
    module = parse_jaas_config(f'{MODULE} required username="admin" password=\'secret\' user_a="1";')
    assert (module.class_name, module.control_flag) == (MODULE, "required")
    assert module.options == {"username": "admin", "password": "secret", "user_a": "1"}


@pytest.mark.parametrize("flag", ["required", "REQUISITE", "Sufficient", "optional"])
def test_control_flags_in_any_case(flag):
    assert parse_jaas_config(f"{MODULE} {flag};").control_flag == flag.lower()


def test_quotes_escapes_comments_and_unquoted_words():
    module = parse_jaas_config(
        f'// the broker\'s own login\n{MODULE} /* flag: */ required\n  key1=value-1_$x  key2="a \\"quoted\\" ; = value";'
    )
    assert module.options == {"key1": "value-1_$x", "key2": 'a "quoted" ; = value'}


@pytest.mark.parametrize(
    "text, error",
    [
        (f"{MODULE} required", "not terminated by ';'"),
        (f"{MODULE} mandatory;", "Invalid control flag 'mandatory'"),
        (f"{MODULE};", "Invalid control flag ';'"),
        (f"{MODULE} required key;", "option key of .* has no '='"),
        (f"{MODULE} required key=;", "Value not specified for key 'key'"),
        (f"{MODULE} required; {MODULE} required;", "contains 2 login modules, should be 1 module"),
        ("", "contains 0 login modules"),
        (f"{MODULE} required key=\"unterminated;", "Unexpected character"),
    ],
)
def test_malformed_values_name_the_problem(text, error):
    with pytest.raises(ValueError, match=error):
        parse_jaas_config(text)


def test_the_listener_setting_name():
    assert jaas_config_key("SASL_PLAINTEXT", "PLAIN") == "listener.name.sasl_plaintext.plain.sasl.jaas.config"


@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_.]{0,10}", fullmatch=True), st.text(max_size=20), max_size=5))
def test_any_quoted_option_value_reads_back(options):
    quoted = " ".join(f'{key}="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for key, value in options.items())
    assert parse_jaas_config(f"{MODULE} required {quoted};").options == options
