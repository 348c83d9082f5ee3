"""Kafka's ``sasl.kerberos.principal.to.local.rules``: from a Kerberos principal to a short name.

A Kerberos name is ``service[/host]@REALM``. Each rule is one of:

* ``DEFAULT``: a name in the default realm maps to its first component
  (``alice/host@EXAMPLE.COM`` -> ``alice``); names in other realms are left to later rules.
* ``RULE:[n:format](match)s/pattern/replacement/g`` with an optional ``/L`` or ``/U``: applies to
  names with ``n`` components. ``format`` builds a string from ``$0`` (the realm), ``$1`` and
  ``$2`` (the components); the rule applies if ``match`` (a Java regular expression, optional)
  matches all of it; then ``s/pattern/replacement/`` (optional) replaces the first match, or
  every match with ``g``; ``L``/``U`` lower- or upper-cases the result.

The first rule that applies gives the short name; a short name containing ``/`` or ``@``, or a
name no rule applies to, is NoMatchingRule. A name without realm is already short.

Kafka reads the default realm from krb5.conf (and uses "" when there is none); kafkasec takes it
from the setting ``kafkasec.kerberos.default.realm`` (default ""). Regular expressions follow
:func:`kafkasec.principals.java_regex.compile_java_regex`. Kafka throws only when a rule is
applied if its format refers to a component the name cannot have (``RULE:[1:$2]``), or if its
replacement refers to a group the pattern lacks; these rules are refused when parsed.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from attrs import field, frozen, validators

from kafkasec.principals.java_regex import JAVA_INT_MAX, JavaReplacement, compile_java_regex
from kafkasec.principals.mapping_rules import (
    DEFAULT_RULE,
    NoMatchingRule,
    apply_case,
    case_flag,
    first_mapping,
    rule_list,
)

_NAME_PARSER = re.compile(r"([^/@]*)(/([^/@]*))?@([^/@]*)")
# Kafka's KerberosShortNamer.RULE_PARSER, read through the Java-regex translator.
_RULE_PARSER = compile_java_regex(
    r"((DEFAULT)|((RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)))"
)
_PARAMETER = re.compile(r"([^$]*)(\$([0-9]*))?")
_NON_SIMPLE = re.compile(r"[/@]")

_optional_str = validators.optional(validators.instance_of(str))


@frozen
class KerberosName:
    """``service_name[/host_name][@realm]``, as Kafka's KerberosName splits it."""

    service_name: str = field(validator=validators.instance_of(str))
    host_name: str | None = field(default=None, validator=_optional_str)
    realm: str | None = field(default=None, validator=_optional_str)

    @realm.validator
    def _host_needs_realm(self, attribute, value):
        # Kafka's parser never yields a host without a realm; rules could not read one.
        if value is None and self.host_name is not None:
            raise ValueError(f"a Kerberos name with a host component needs a realm: {self.service_name}/{self.host_name}")

    @classmethod
    def parse(cls, principal_name: str) -> KerberosName:
        """Split a Kerberos principal name. Text without ``@`` is a bare service name (even
        with a ``/``); more than one ``@``, or a ``/`` after the first, is a ValueError."""
        if not isinstance(principal_name, str):
            raise TypeError(f"a Kerberos principal name must be a str, not {principal_name!r}")
        match = _NAME_PARSER.fullmatch(principal_name)
        if match is None:
            if "@" in principal_name:
                raise ValueError(f"Malformed Kerberos name: {principal_name}")
            return cls(principal_name)
        return cls(match.group(1), match.group(3), match.group(4))

    def __str__(self) -> str:
        host = "" if self.host_name is None else f"/{self.host_name}"
        realm = "" if self.realm is None else f"@{self.realm}"
        return f"{self.service_name}{host}{realm}"


def _format_pieces(format: str) -> list[tuple[str, int | None]]:
    """(literal, parameter index or None) pairs of a rule's format; ValueError for a ``$``
    without digits, as Kafka's BadFormatString."""
    pieces: list[tuple[str, int | None]] = []
    start = 0
    while start < len(format):
        match = _PARAMETER.match(format, start)
        assert match is not None  # _PARAMETER matches the empty string, so at every position
        digits = match.group(3)
        if digits is None:
            pieces.append((match.group(1), None))
        elif not digits or len(digits) > 10 or int(digits) > JAVA_INT_MAX:
            raise ValueError(f"bad format in username mapping in {format!r}: '${digits}' is not a parameter")
        else:
            pieces.append((match.group(1), int(digits)))
        start = match.end()
    return pieces


def replace_parameters(format: str, params: Sequence[str]) -> str:
    """Kafka's KerberosRule.replaceParameters: ``$n`` becomes ``params[n]``, nothing recursive.

    ValueError for an index outside ``params`` or a ``$`` without digits.
    """
    out = []
    for literal, index in _format_pieces(format):
        out.append(literal)
        if index is not None:
            if index >= len(params):
                raise ValueError(
                    f"index {index} from {format} is outside of the valid range 0 to {len(params) - 1}"
                )
            out.append(params[index])
    return "".join(out)


@frozen
class KerberosRule:
    """One auth_to_local rule. ``num_components`` None is ``DEFAULT``; otherwise the rule is
    ``RULE:[num_components:format](match)s/from_pattern/to_pattern/g`` with ``case`` L or U."""

    num_components: int | None = field(default=None, validator=validators.optional(validators.instance_of(int)))
    format: str | None = field(default=None, validator=_optional_str)
    match: str | None = field(default=None, validator=_optional_str)
    from_pattern: str | None = field(default=None, validator=_optional_str)
    to_pattern: str | None = field(default=None, validator=_optional_str)
    repeat: bool = field(default=False, validator=validators.instance_of(bool))
    case: str = field(default="", validator=case_flag)
    _match_regex: re.Pattern | None = field(init=False, repr=False, eq=False)
    _substitution: JavaReplacement | None = field(init=False, repr=False, eq=False)

    @_match_regex.default
    def _compile_match(self) -> re.Pattern | None:
        if self.num_components is None:
            if (self.format, self.match, self.from_pattern, self.to_pattern, self.repeat, self.case) != (
                None, None, None, None, False, ""
            ):
                raise ValueError("the DEFAULT rule takes no format, patterns or flags")
            return None
        if self.format is None:
            raise ValueError("a RULE needs a format such as '$1'")
        if not 0 <= self.num_components <= JAVA_INT_MAX:
            raise ValueError(f"the number of components must be 0 to {JAVA_INT_MAX}, not {self.num_components}")
        highest = max((index for _, index in _format_pieces(self.format) if index is not None), default=0)
        if highest > self.num_components:
            raise ValueError(
                f"the format {self.format!r} refers to ${highest}, but names with "
                f"{self.num_components} components have only $0 to ${self.num_components}"
            )
        return None if self.match is None else compile_java_regex(self.match)

    @_substitution.default
    def _compile_substitution(self) -> JavaReplacement | None:
        if self.from_pattern is None and self.to_pattern is None:
            if self.repeat:
                raise ValueError("'g' repeats a substitution, and the rule has none")
            return None
        if self.from_pattern is None or self.to_pattern is None:
            raise ValueError("a substitution needs both a pattern and a replacement")
        return JavaReplacement(compile_java_regex(self.from_pattern), self.to_pattern)

    @classmethod
    def parse(cls, rule: str) -> KerberosRule:
        """One rule in Kafka's syntax; ValueError quoting the rule when Kafka would refuse it,
        or when it could only fail when applied."""
        if not isinstance(rule, str):
            raise TypeError(f"a Kerberos rule must be a str, not {rule!r}")
        matched = _RULE_PARSER.match(rule)
        if matched is None:
            raise ValueError(f"invalid rule {rule!r}")
        if matched.end() != len(rule):
            raise ValueError(f"invalid rule {rule!r}: unmatched substring {rule[matched.end():]!r}")
        if matched.group(2) is not None:
            return cls()
        digits = matched.group(5)
        if not digits or len(digits) > 10 or int(digits) > JAVA_INT_MAX:
            raise ValueError(f"invalid rule {rule!r}: {digits!r} is not a number of components")
        try:
            return cls(
                int(digits),
                matched.group(6),
                matched.group(8),
                matched.group(10),
                matched.group(11),
                matched.group(12) == "g",
                matched.group(13) or "",
            )
        except ValueError as error:
            raise ValueError(f"invalid rule {rule!r}: {error}") from None

    @property
    def is_default(self) -> bool:
        return self.num_components is None

    def apply(self, params: Sequence[str], default_realm: str) -> str | None:
        """The short name for ``params`` (realm, then the components), or None if the rule
        does not apply; NoMatchingRule if it gives a name with ``/`` or ``@``."""
        result = None
        if self.num_components is None:
            if params[0] == default_realm:
                result = params[1]
        elif len(params) - 1 == self.num_components:
            assert self.format is not None  # a RULE always has one (checked by _compile_match)
            base = replace_parameters(self.format, params)
            if self._match_regex is None or self._match_regex.fullmatch(base):
                result = base if self._substitution is None else self._substitution.replace(base, 0 if self.repeat else 1)
        if result is not None and _NON_SIMPLE.search(result):
            raise NoMatchingRule(f"Non-simple name {result} after auth_to_local rule {self}")
        return None if result is None else apply_case(result, self.case)

    def __str__(self) -> str:
        if self.num_components is None:
            return DEFAULT_RULE
        text = f"RULE:[{self.num_components}:{self.format}]"
        if self.match is not None:
            text += f"({self.match})"
        if self.from_pattern is not None:
            text += f"s/{self.from_pattern}/{self.to_pattern}/" + ("g" if self.repeat else "")
        return text + (f"/{self.case}" if self.case else "")


def _rule_tuple(rules: Iterable[KerberosRule]) -> tuple[KerberosRule, ...]:
    # A named converter: attrs' mypy plugin cannot read the argument type of converter=tuple.
    return tuple(rules)


@frozen
class KerberosShortNamer:
    """Kafka's KerberosShortNamer: the first rule that applies gives the short name."""

    rules: tuple[KerberosRule, ...] = field(
        converter=_rule_tuple, validator=validators.deep_iterable(validators.instance_of(KerberosRule))
    )
    default_realm: str = field(default="", validator=validators.instance_of(str))

    @classmethod
    def parse(cls, rules: Iterable[str] | None = (DEFAULT_RULE,), default_realm: str = "") -> KerberosShortNamer:
        """From the rule texts (None: ``DEFAULT`` only), as Kafka's fromUnparsedRules."""
        if rules is None:
            rules = (DEFAULT_RULE,)
        if isinstance(rules, str):
            raise TypeError("rules is a list of rule texts; a single string would be read letter by letter")
        return cls(tuple(KerberosRule.parse(rule) for rule in rules), default_realm)

    def short_name(self, name: KerberosName) -> str:
        """The short name; NoMatchingRule when no rule applies."""
        if not isinstance(name, KerberosName):
            raise TypeError(f"short_name takes a KerberosName, not {name!r}")
        if name.realm is None:
            # A bare service name: KerberosName refuses a host without a realm.
            return name.service_name
        params = [name.realm, name.service_name]
        if name.host_name is not None:
            params.append(name.host_name)
        return first_mapping(self.rules, name, lambda rule: rule.apply(params, self.default_realm))

    def __str__(self) -> str:
        return f"KerberosShortNamer(principalToLocalRules = {rule_list(self.rules)})"


__all__ = ["KerberosName", "KerberosRule", "KerberosShortNamer", "replace_parameters"]
