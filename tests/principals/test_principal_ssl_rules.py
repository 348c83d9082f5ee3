"""ssl.principal.mapping.rules and the subject DN, checked against Kafka's SslPrincipalMapperTest,
the JDK's X500Principal.getName() and Java's regular-expression semantics."""


import pytest
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import NameOID
from hypothesis import given, strategies as st

from kafkasec.principals.java_regex import compile_java_regex, java_find_all
from kafkasec.principals.mapping_rules import NoMatchingRule
from kafkasec.principals.ssl_rules import SslPrincipalMapper, SslPrincipalMappingRule, escape_literal_back_references
from kafkasec.principals.x500 import x500_principal_name
from kafkasec.settings import java_trim

from certificates import A, self_signed

# ---------------------------------------------------------------- Kafka's SslPrincipalMapperTest


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules):
    SslPrincipalMapper.parse(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    ],
)
def test_invalid_rules(rules):
    with pytest.raises(ValueError, match="invalid rule"):
        SslPrincipalMapper.parse(rules)


def test_ssl_principal_mapper():
    mapper = SslPrincipalMapper.parse(
        ", ".join(
            [
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    assert mapper.get_name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.get_name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.get_name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.get_name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.get_name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"


@pytest.mark.parametrize(
    "expected, rules",
    [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
        ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
        ("[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "),
        # empty rules are ignored
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
        ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
        # escape sequences
        (r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//"),
        (r"[RULE:\**\/+/*/L, RULE:\/*\**/**]", r"RULE:\**\/+/*/L,RULE:\/*\**/**/"),
        # rules rule
        (
            r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
            r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
        ),
    ],
)
def test_rules_splitting(expected, rules):
    assert str(SslPrincipalMapper.parse(rules)) == f"SslPrincipalMapper(rules = {expected})"


def test_comma_with_whitespace():
    mapper = SslPrincipalMapper.parse(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.get_name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz") == r"Tkac\, Adam"


# ---------------------------------------------------------------- rule semantics beyond Kafka's tests


def test_no_matching_rule_names_the_dn_and_the_rules():
    mapper = SslPrincipalMapper.parse("RULE:^CN=(.*),OU=Users$/$1/")
    with pytest.raises(NoMatchingRule, match=r"No rules apply to CN=a,OU=Admins, rules \[RULE:\^CN=\(\.\*\),OU=Users\$/\$1\]"):
        mapper.get_name("CN=a,OU=Admins")
    assert SslPrincipalMapper.parse("").rules == ()
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper.parse("").get_name("CN=a")


def test_a_rule_must_match_the_whole_dn_and_the_first_match_wins():
    mapper = SslPrincipalMapper.parse("RULE:CN=admin/root/, RULE:^CN=(\\w+).*/$1/, DEFAULT")
    assert mapper.get_name("CN=admin") == "root"
    assert mapper.get_name("CN=admin,O=x") == "admin"  # the first rule only finds, so it does not apply


def test_replacement_is_applied_with_replace_all_as_kafka_does():
    # Kafka checks matches() and then calls replaceAll: ".*" also matches the empty end.
    assert SslPrincipalMapper.parse("RULE:(.*)/[$1]/").get_name("CN=a") == "[CN=a][]"
    assert SslPrincipalMapper.parse("RULE:^(.*)$/[$1]/").get_name("CN=a") == "[CN=a]"


@pytest.mark.parametrize(
    "replacement, expected",
    [
        ("$1@$2", "a@b"),
        ("$1@$4", "a@$4"),  # Kafka writes a reference to a missing group literally
        ("$12", "a2"),  # Java reads group 1 and a "2"
        ("$0", "CN=a,OU=b,O=c"),
        (r"\$1", "$1"),
        ("${user}", "a"),
        ("$3", ""),  # the optional group did not take part: it inserts nothing
    ],
)
def test_java_replacement_strings(replacement, expected):
    rule = f"RULE:^CN=(?<user>\\w+),OU=(\\w+),O=(?:c|(x))$/{replacement}/"
    assert SslPrincipalMapper.parse(rule).get_name("CN=a,OU=b,O=c") == expected


def test_escape_literal_back_references_keeps_kafkas_offset_quirk():
    assert escape_literal_back_references("$1@$4", 3) == r"$1@\$4"
    # Kafka scans the original text but inserts into the changed one: the second backslash
    # lands one character early, and "$5" remains a reference to a group that does not exist.
    assert escape_literal_back_references("$4$5", 3) == r"\$\4$5"
    assert escape_literal_back_references("$4", 0) == "$4"
    with pytest.raises(ValueError, match="refers to group 5; the pattern has 3"):
        SslPrincipalMapper.parse("RULE:^(a)(b)(c)$/$4$5/")


def test_case_conversion_is_unicode_as_in_java():
    mapper = SslPrincipalMapper.parse("RULE:^CN=(.*)$/$1/U, DEFAULT")
    assert mapper.get_name("CN=zoë straße") == "ZOË STRASSE"
    assert SslPrincipalMapper.parse("RULE:^CN=(.*)$/$1/L").get_name("CN=ÀB") == "àb"


@pytest.mark.parametrize(
    "rules, quoted",
    [
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?)"),
        ("RULE:^CN=\\p{Lu}+$/x/", "RULE:^CN=\\p{Lu}+$/x/"),
        ("RULE:^CN=(a$/x/", "RULE:^CN=(a$/x/"),
        ("RULE:^CN=.*$/$1/", "RULE:^CN=.*$/$1/"),  # Kafka: IndexOutOfBoundsException on every match
        ("RULE:^CN=(.*)$/x$/", "RULE:^CN=(.*)$/x$/"),
        ("RULE:^CN=(.*)$/${who}/", "RULE:^CN=(.*)$/${who}/"),
        ("RULE:(?<=a+)b/x/", "RULE:(?<=a+)b/x/"),
    ],
)
def test_bad_rules_fail_when_parsed_and_quote_the_rule(rules, quoted):
    with pytest.raises(ValueError) as failure:
        SslPrincipalMapper.parse(rules)
    assert repr(quoted) in str(failure.value)


def test_rule_values():
    assert str(SslPrincipalMappingRule()) == "DEFAULT" and SslPrincipalMappingRule().is_default
    assert str(SslPrincipalMappingRule("(.*)", "$1", "U")) == "RULE:(.*)/$1/U"
    with pytest.raises(ValueError, match="both a pattern and a replacement"):
        SslPrincipalMappingRule("(.*)")
    with pytest.raises(ValueError, match="case must be"):
        SslPrincipalMappingRule("(.*)", "$1", "X")
    with pytest.raises(ValueError, match="DEFAULT rule takes no case"):
        SslPrincipalMappingRule(case="L")
    with pytest.raises(TypeError):
        SslPrincipalMapper.parse(["DEFAULT"])
    assert SslPrincipalMapper.parse(None) == SslPrincipalMapper.parse("DEFAULT")


@given(st.text())
def test_a_default_only_mapper_is_the_identity(dn):
    assert SslPrincipalMapper.parse("DEFAULT").get_name(dn) == dn


_RULE_TEXTS = {  # a rule as written, and as Kafka's toString shows it
    "DEFAULT": "DEFAULT",
    "RULE:^CN=(.*)$/$1/L": "RULE:^CN=(.*)$/$1/L",
    "RULE:^O=([^,]+),.*$/o:$1/": "RULE:^O=([^,]+),.*$/o:$1",
    "RULE:x/y/U": "RULE:x/y/U",
}


@given(st.lists(st.sampled_from(sorted(_RULE_TEXTS)), max_size=5), st.sampled_from([",", " , ", ",\t"]))
def test_joined_rules_split_back(rules, separator):
    shown = ", ".join(_RULE_TEXTS[rule] for rule in rules)
    assert str(SslPrincipalMapper.parse(separator.join(rules))) == f"SslPrincipalMapper(rules = [{shown}])"


# ---------------------------------------------------------------- Java regular expressions


@pytest.mark.parametrize(
    "pattern, text, matches",
    [
        ("a.b", "a\nb", False),
        ("a.b", "a\rb", False),  # "." matches no Java line terminator, unlike Python's
        ("a.b", "a\u2028b", False),
        ("a.b", "a\x85b", False),
        ("(?s)a.b", "a\u2028b", True),
        ("a(?s:.)b.", "a\nbc", True),
        (r"\d+", "12", True),
        (r"\d", "\u0663", False),  # Java's \d, \w, \s are ASCII
        (r"\w", "é", False),
        (r"\s", "\u00a0", False),
        ("(?i)abc", "ABC", True),
        ("(?i)é", "É", False),  # Java folds ASCII case only (no UNICODE_CASE)
        ("a(?i)b|c", "C", True),  # (?i) lasts to the end of the group, across "|"
        ("((?i)a)b", "AB", False),
        ("((?i)a)b", "Ab", True),
        (r"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\10", "abcdefghijj", True),
        (r"(a)\10", "aa0", True),  # only one group: \1 and then a literal 0
        (r"\Qa.b\E*", "a.bbb", True),
        (r"\Qa.b\E*", "a.ba.b", False),
        (r"[\Q]-\E]+", "]-]", True),
        (r"\x41\u0042\0103\x{44}\t", "ABCD\t", True),
        (r"\uD83D\uDE00", "\U0001F600", True),  # an escaped surrogate pair is one character
        ("[]a]+", "]a", True),
        ("[^]a]", "b", True),
        ("[a-c-]+", "a-c", True),
        ("a{2}+b", "aab", True),
        ("(?>a+)a", "aaa", False),
        ("(?<n>x)\\k<n>", "xx", True),
        ("a++a", "aaa", False),
        ("[a-z&]+", "a&b", True),
    ],
)
def test_java_regex_semantics(pattern, text, matches):
    assert (compile_java_regex(pattern).fullmatch(text) is not None) is matches


@pytest.mark.parametrize(
    "text, found",
    [
        ("abc", True),
        ("abc\n", True),  # "$" also matches before a final line terminator
        ("abc\r\n", True),
        ("abc\u2028", True),
        ("abc\n\n", False),
        ("abcd", False),
    ],
)
def test_java_dollar(text, found):
    assert (compile_java_regex("abc$").search(text) is not None) is found
    assert (compile_java_regex(r"abc\Z").search(text) is not None) is found
    assert (compile_java_regex(r"abc\z").search(text) is not None) is (text == "abc")


def test_dollar_never_matches_inside_a_final_crlf():
    regex = compile_java_regex("$")
    assert [match.start() for match in java_find_all(regex, "a\r\n")] == [1, 3]


@pytest.mark.parametrize(
    "pattern, reason",
    [
        (r"\p{L}", "Unicode properties"),
        ("[a[b]]", "union"),
        ("[a&&b]", "intersection"),
        ("(?m)^a", "inline flag 'm'"),
        ("(?x)a b", "inline flag 'x'"),
        ("(?u)a", "inline flag 'u'"),
        ("{2}a", "Illegal repetition"),
        ("a{,3}", "Illegal repetition"),
        ("a{", "Illegal repetition"),
        ("a**", "Dangling"),
        ("*a", "Dangling"),
        ("^*", "Dangling"),
        (r"\1(a)", "no group defined before it"),
        (r"(a\1)", "from inside it"),
        (r"\G", r"\\G"),
        (r"\h", r"\\h"),
        ("(?<=a+)b", "look-behind"),
        ("(a", "Unclosed group"),
        ("a)", "Unmatched closing"),
        ("[a", "Unclosed character class"),
        ("[z-a]", "Illegal character range"),
        ("[a-c-e]", "'-'"),
        ("a{3,2}", "Illegal repetition range"),
        ("(?P<x>a)", "Unknown inline modifier"),
        ("\\", "ends too early"),
    ],
)
def test_java_regex_features_without_a_python_equivalent_are_refused(pattern, reason):
    with pytest.raises(ValueError, match=reason):
        compile_java_regex(pattern)


@given(st.text().filter(lambda t: "\\E" not in t))
def test_quoted_text_matches_itself(text):
    assert compile_java_regex(f"\\Q{text}\\E").fullmatch(text)


def test_java_trim_and_find():
    assert java_trim("\t\x00 a b \n\u2028") == "a b \n\u2028"
    # After an empty match Java looks again one character on.
    assert [m.span() for m in java_find_all(compile_java_regex("x*"), "axx")] == [(0, 0), (1, 3), (3, 3)]


# ---------------------------------------------------------------- X500Principal.getName()


@pytest.mark.parametrize(
    "rdns, expected",
    [
        (
            [A(NameOID.COUNTRY_NAME, "US"), A(NameOID.ORGANIZATION_NAME, "Org"),
             A(NameOID.ORGANIZATIONAL_UNIT_NAME, "ServiceUsers"), A(NameOID.COMMON_NAME, "Duke")],
            "CN=Duke,OU=ServiceUsers,O=Org,C=US",
        ),
        ([A(NameOID.COMMON_NAME, "Tkac, Adam")], r"CN=Tkac\, Adam"),
        ([A(NameOID.COMMON_NAME, ' #a=b+c<d>e;f"g\\h ')], r'CN=\ \#a\=b\+c\<d\>e\;f\"g\\h\ '),
        ([A(NameOID.COMMON_NAME, "  ")], r"CN=\ \ "),
        ([A(NameOID.COMMON_NAME, "\ra\r")], "CN=\\\ra\\\r"),
        ([A(NameOID.COMMON_NAME, "a\x00b")], r"CN=a\00b"),
        ([A(NameOID.COMMON_NAME, "a@b_c*d!&")], "CN=a@b_c*d!&"),
        ([A(NameOID.COMMON_NAME, "Zoë 日本 😀")], "CN=Zoë 日本 😀"),
        ([A(NameOID.COMMON_NAME, "a"), A(NameOID.EMAIL_ADDRESS, "a@b.com")], "1.2.840.113549.1.9.1=#16076140622e636f6d,CN=a"),
        ([A(NameOID.SERIAL_NUMBER, "123"), A(NameOID.TITLE, "Dr")], "2.5.4.12=#0c024472,2.5.4.5=#1303313233"),
        (
            [A(NameOID.DOMAIN_COMPONENT, "com"), A(NameOID.DOMAIN_COMPONENT, "example"),
             [A(NameOID.COMMON_NAME, "a"), A(NameOID.USER_ID, "b")]],
            "CN=a+UID=b,DC=example,DC=com",
        ),
        ([A(NameOID.STREET_ADDRESS, "1 Main St"), A(NameOID.LOCALITY_NAME, "Town"), A(NameOID.STATE_OR_PROVINCE_NAME, "ST")],
         "ST=ST,L=Town,STREET=1 Main St"),
        # Java decodes a BMPString's octets as UTF-8: "Zo" is 005A 006F.
        ([A(NameOID.COMMON_NAME, "Zo", _type=_ASN1Type.BMPString)], r"CN=\00Z\00o"),
        ([A(NameOID.COMMON_NAME, "abc", _type=_ASN1Type.UniversalString)], "CN=#1c0c000000610000006200000063"),
        ([], ""),
    ],
)
def test_x500_principal_name(rdns, expected):
    assert x500_principal_name(self_signed(*rdns)) == expected


def test_x500_principal_name_takes_a_certificate():
    with pytest.raises(TypeError):
        x500_principal_name(b"not a certificate")


def split_rfc2253(text):
    """The RDNs of an RFC 2253 string in text order, as lists of (type, value): the inverse of
    Java's escaping, written independently of the code under test."""
    rdns, avas, current, attribute = [], [], [], None
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            if text[index + 1:index + 3] == "00":
                current.append("\0")
                index += 3
                continue
            current.append(text[index + 1])
            index += 2
            continue
        if char == "=" and attribute is None:
            attribute, current = "".join(current), []
        elif char in "+,":
            avas.append((attribute, "".join(current)))
            attribute, current = None, []
            if char == ",":
                rdns.append(avas)
                avas = []
        else:
            current.append(char)
        index += 1
    avas.append((attribute, "".join(current)))
    rdns.append(avas)
    return rdns


_KEYWORDS = {
    NameOID.COMMON_NAME: "CN",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.LOCALITY_NAME: "L",
    NameOID.STATE_OR_PROVINCE_NAME: "ST",
    NameOID.STREET_ADDRESS: "STREET",
    NameOID.USER_ID: "UID",
}
_VALUES = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
_SUBJECTS = st.lists(st.tuples(st.sampled_from(sorted(_KEYWORDS, key=str)), _VALUES), min_size=1, max_size=5)


@given(_SUBJECTS)
def test_the_dn_text_gives_back_every_value(attributes):
    certificate = self_signed(*(A(oid, value) for oid, value in attributes))
    expected = [[(_KEYWORDS[oid], value)] for oid, value in reversed(attributes)]
    assert split_rfc2253(x500_principal_name(certificate)) == expected


_PLAIN = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9 .'()/:?-]{0,20}[A-Za-z0-9])?", fullmatch=True)


@given(st.lists(st.tuples(st.sampled_from(sorted(_KEYWORDS, key=str)), _PLAIN), min_size=1, max_size=5))
def test_plain_values_read_as_in_rfc4514(attributes):
    certificate = self_signed(*(A(oid, value) for oid, value in attributes))
    assert x500_principal_name(certificate) == certificate.subject.rfc4514_string()
