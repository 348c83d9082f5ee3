"""Kafka's ``ssl.principal.mapping.rules``: from a client certificate's subject to a short name.

Two things a broker does with a certificate are reproduced here:

* :func:`kafkasec.principals.x500.x500_principal_name` writes the subject DN as Java's ``X500Principal.getName()`` does
  (RFC 2253 form), the text Kafka's rules are matched against and the principal name under the
  ``DEFAULT`` rule.
* :class:`SslPrincipalMapper` parses the rules exactly as Kafka's ``SslPrincipalMapper`` does
  (the same rule-splitting regular expressions, so commas, escapes and empty rules are read the
  same way) and applies the first rule that matches.

The rules are Java regular expressions and replacement strings, read through
:mod:`kafkasec.principals.java_regex`.
"""

from __future__ import annotations

import re
from typing import Iterable

from attrs import field, frozen, validators

from kafkasec.principals.java_regex import JAVA_INT_MAX, JavaReplacement, compile_java_regex, java_find_all
from kafkasec.principals.mapping_rules import (
    DEFAULT_RULE,
    NoMatchingRule,
    apply_case,
    case_flag,
    first_mapping,
    rule_list,
)
from kafkasec.settings import java_trim

# Kafka's own rule grammar, read by the translator so that it splits and parses exactly as Java.
_RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = compile_java_regex(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER = compile_java_regex(_RULE_PATTERN)
_BACK_REFERENCE = re.compile(r"\$([0-9]+)")


def escape_literal_back_references(replacement: str, group_count: int) -> str:
    """Kafka's escapeLiteralBackReferences: ``$n`` naming no group becomes a literal ``$n``.

    ``$123`` with 12 groups is kept (Java reads it as group 12 and a "3"). Reproduced with
    Kafka's own quirk: it scans the original text but inserts into the text already changed,
    so from the second escape on, each backslash lands one character earlier per escape made.
    """
    if group_count == 0:
        return replacement
    value = replacement
    for match in _BACK_REFERENCE.finditer(replacement):
        digits = match.group(1)
        if digits.startswith("0"):
            continue
        if len(digits) > 10 or int(digits) > JAVA_INT_MAX:
            raise ValueError(f"the back reference ${digits} is too large for Kafka to read")
        index = int(digits)
        while index > group_count and index >= 10:
            index //= 10
        if index > group_count:
            start = match.start(1) - 1
            value = value[:start] + "\\" + value[start:]
    return value


@frozen
class SslPrincipalMappingRule:
    """``DEFAULT`` (no pattern) or ``RULE:pattern/replacement/`` with case ``L`` or ``U``."""

    pattern: str | None = field(default=None, validator=validators.optional(validators.instance_of(str)))
    replacement: str | None = field(default=None, validator=validators.optional(validators.instance_of(str)))
    case: str = field(default="", validator=case_flag)
    _substitution: JavaReplacement | None = field(init=False, repr=False, eq=False)

    @_substitution.default
    def _compile(self) -> JavaReplacement | None:
        if self.pattern is None and self.replacement is None:
            if self.case:
                raise ValueError("the DEFAULT rule takes no case flag")
            return None
        if self.pattern is None or self.replacement is None:
            raise ValueError("a rule has both a pattern and a replacement, or neither (DEFAULT)")
        regex = compile_java_regex(self.pattern)
        return JavaReplacement(regex, escape_literal_back_references(self.replacement, regex.groups))

    @property
    def is_default(self) -> bool:
        return self.pattern is None

    def apply(self, distinguished_name: str) -> str | None:
        """The short name, or None when the rule does not match the whole DN."""
        if self._substitution is None:
            return distinguished_name
        if self._substitution.regex.fullmatch(distinguished_name) is None:
            return None
        return apply_case(self._substitution.replace(distinguished_name), self.case)

    def __str__(self) -> str:
        if self.pattern is None:
            return DEFAULT_RULE
        case = f"/{self.case}" if self.case else ""
        return f"RULE:{self.pattern}/{self.replacement}{case}"


def split_rules(rules: str) -> list[str]:
    """The rule texts of ``ssl.principal.mapping.rules``, split as Kafka splits them (empty
    ones included; they are ignored when parsed)."""
    return [match.group(1) for match in java_find_all(_RULE_SPLITTER, java_trim(rules))]


def parse_rule(text: str) -> SslPrincipalMappingRule | None:
    """One rule; None for an empty one. ValueError quoting the rule when it is malformed."""
    match = _RULE_PARSER.match(text)
    assert match is not None  # its last alternative, (.*?), matches any text
    if match.end() != len(text):
        raise ValueError(f"invalid rule {text!r}: unmatched substring {text[match.end():]!r}")
    if match.group(1) is not None:
        return SslPrincipalMappingRule()
    if match.group(2) is None:
        return None
    try:
        return SslPrincipalMappingRule(match.group(2), match.group(4), match.group(6))
    except ValueError as error:
        raise ValueError(f"invalid rule {text!r}: {error}") from None


def _rule_tuple(rules: Iterable[SslPrincipalMappingRule]) -> tuple[SslPrincipalMappingRule, ...]:
    # A named converter: attrs' mypy plugin cannot read the argument type of converter=tuple.
    return tuple(rules)


@frozen
class SslPrincipalMapper:
    """Kafka's SslPrincipalMapper: the first rule that maps the DN gives the short name."""

    rules: tuple[SslPrincipalMappingRule, ...] = field(
        converter=_rule_tuple,
        validator=validators.deep_iterable(validators.instance_of(SslPrincipalMappingRule)),
    )

    @classmethod
    def parse(cls, rules: str | None = DEFAULT_RULE) -> SslPrincipalMapper:
        """From the text of ``ssl.principal.mapping.rules`` (None: ``DEFAULT``)."""
        if rules is None:
            rules = DEFAULT_RULE
        if not isinstance(rules, str):
            raise TypeError(f"the mapping rules must be a str, not {rules!r}")
        parsed = (parse_rule(text) for text in split_rules(rules))
        return cls(tuple(rule for rule in parsed if rule is not None))

    def get_name(self, distinguished_name: str) -> str:
        """The short name for a DN in ``X500Principal.getName()`` form; NoMatchingRule if no
        rule maps it."""
        return first_mapping(self.rules, distinguished_name, lambda rule: rule.apply(distinguished_name))

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = {rule_list(self.rules)})"


__all__ = [
    "DEFAULT_RULE",
    "NoMatchingRule",
    "SslPrincipalMapper",
    "SslPrincipalMappingRule",
    "escape_literal_back_references",
    "parse_rule",
    "split_rules",
]
