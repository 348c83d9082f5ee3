"""ACLs that are valid to Kafka but can never match a request, and why.

Kafka stores these without a word: ``user:alice`` (principal types are case-sensitive, and
logins are ``User:``), an empty principal name, a hostname or a CIDR block as a host (Kafka
compares hosts as exact IP address strings), ``orders*`` as a LITERAL name (``*`` is a wildcard
only as the whole name; a prefix needs PREFIXED).
"""

from __future__ import annotations

import ipaddress
from typing import Iterable

from kafkasec.acl import WILDCARD_HOST, WILDCARD_RESOURCE, AclBinding, PatternType

KNOWN_PRINCIPAL_TYPES = ("User", "Group")


def never_matching_reasons(binding: AclBinding) -> list[str]:
    """Why ``binding`` can never match a request (empty when it can)."""
    reasons = []
    entry, pattern = binding.entry, binding.pattern
    principal_type, _, name = entry.principal.partition(":")
    for known in KNOWN_PRINCIPAL_TYPES:
        if principal_type != known and principal_type.lower() == known.lower():
            reasons.append(
                f"principal {entry.principal}: principal types are case-sensitive and logins are {known}:, "
                f"so it matches nobody"
            )
    if not name and entry.principal != "User:*":
        reasons.append(f"principal {entry.principal} has an empty name: it matches nobody")
    if entry.host != WILDCARD_HOST:
        try:
            ipaddress.ip_address(entry.host)
        except ValueError:
            kind = "a CIDR block" if "/" in entry.host else "a hostname"
            reasons.append(
                f"host {entry.host} is {kind}: Kafka compares hosts as exact IP addresses, so it matches no client"
            )
    if pattern.pattern_type is PatternType.LITERAL and pattern.name != WILDCARD_RESOURCE and "*" in pattern.name:
        reasons.append(
            f"resource name {pattern.name!r} is LITERAL: '*' is a wildcard only as the whole name; "
            f"for names starting with {pattern.name.split('*')[0]!r} use --resource-pattern-type prefixed"
        )
    return reasons


def warnings_for(bindings: Iterable[AclBinding]) -> list[str]:
    """One line per distinct reason among ``bindings``, in order."""
    return list(dict.fromkeys(reason for binding in bindings for reason in never_matching_reasons(binding)))
