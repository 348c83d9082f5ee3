"""What Kafka's two principal-mapping rule sets share: SSL's ``ssl.principal.mapping.rules``
(:mod:`kafkasec.principals.ssl_rules`) and Kerberos's ``sasl.kerberos.principal.to.local.rules``
(:mod:`kafkasec.principals.kerberos`)."""

from __future__ import annotations

DEFAULT_RULE = "DEFAULT"


class NoMatchingRule(ValueError):
    """No rule maps the name (Kafka's NoMatchingRule). A broker refuses the connection."""


def case_flag(instance, attribute, value) -> None:
    """attrs validator of a rule's case flag: '' (kept), 'L' (lower) or 'U' (upper)."""
    if value not in ("", "L", "U"):
        raise ValueError(f"case must be '', 'L' (lower) or 'U' (upper), not {value!r}")


def first_mapping(rules, name, apply) -> str:
    """The short name from the first of ``rules`` for which ``apply(rule)`` is not None (Kafka:
    the first rule that applies wins); NoMatchingRule naming ``name`` and the rules otherwise."""
    for rule in rules:
        result = apply(rule)
        if result is not None:
            return result
    raise NoMatchingRule(f"No rules apply to {name}, rules {rule_list(rules)}")


def rule_list(rules) -> str:
    """The rules as Kafka prints them in messages: ``[DEFAULT, RULE:...]``."""
    return "[" + ", ".join(str(rule) for rule in rules) + "]"


def apply_case(name: str, case: str) -> str:
    """``name`` lower-cased for 'L', upper-cased for 'U', else as it is."""
    if case == "L":
        return name.lower()
    if case == "U":
        return name.upper()
    return name


__all__ = ["DEFAULT_RULE", "NoMatchingRule", "apply_case", "case_flag", "first_mapping", "rule_list"]
