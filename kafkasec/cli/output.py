"""What the command prints: Kafka's own text for ACLs, and records as a table, JSON or CSV."""

from __future__ import annotations

import csv
import json
from typing import Iterable, Sequence, TextIO

from kafkasec.acl import (
    AccessControlEntry,
    AclBinding,
    ResourcePattern,
    ResourcePatternFilter,
)

LIST_SEPARATOR = ";"
"""Joins a list inside one table or CSV cell; principal names may hold commas, as in super.users."""


# ---------------------------------------------------------------- Kafka's text (its Java toString)


def kafka_pattern(pattern: ResourcePattern | ResourcePatternFilter) -> str:
    name = "<any>" if pattern.name is None else pattern.name
    return (
        f"ResourcePattern(resourceType={pattern.resource_type.name}, name={name}, "
        f"patternType={pattern.pattern_type.name})"
    )


def kafka_entry(entry: AccessControlEntry) -> str:
    return (
        f"(principal={entry.principal}, host={entry.host}, operation={entry.operation.name}, "
        f"permissionType={entry.permission_type.name})"
    )


def kafka_binding(binding: AclBinding) -> str:
    return f"(pattern={kafka_pattern(binding.pattern)}, entry={kafka_entry(binding.entry)})"


def kafka_entry_block(entries: Iterable[AccessControlEntry]) -> str:
    """kafka-acls.sh's list of entries inside a message: NL, a space, then one tab-led line each."""
    return "\n " + "\n".join(f"\t{kafka_entry(entry)}" for entry in entries) + "\n"


def binding_sort_key(binding: AclBinding):
    pattern, entry = binding.pattern, binding.entry
    return (
        pattern.resource_type,
        pattern.name,
        pattern.pattern_type,
        entry.principal,
        entry.host,
        entry.operation,
        entry.permission_type,
    )


def write_acls_by_resource(out: TextIO, heading: str, bindings: Iterable[AclBinding]) -> None:
    """kafka-acls.sh's --list text: per resource pattern, "<heading> `pattern`:", its entries, a blank line.

    ``heading`` is Kafka's "Current ACLs for resource", or the same for what was removed.
    """
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in sorted(set(bindings), key=binding_sort_key):
        by_pattern.setdefault(binding.pattern, []).append(binding.entry)
    for pattern, entries in by_pattern.items():
        lines = "\n".join(f"\t{kafka_entry(entry)}" for entry in entries)
        out.write(f"{heading} `{kafka_pattern(pattern)}`:\n{lines}\n\n")


# ---------------------------------------------------------------- records

ACL_FIELDS = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)
"""The fields of an ACL record: JSON and CSV output, export and import."""


def binding_record(binding: AclBinding) -> dict[str, str]:
    pattern, entry = binding.pattern, binding.entry
    return {
        "resource_type": pattern.resource_type.name,
        "resource_name": pattern.name,
        "pattern_type": pattern.pattern_type.name,
        "principal": entry.principal,
        "host": entry.host,
        "operation": entry.operation.name,
        "permission_type": entry.permission_type.name,
    }


def write_records(out: TextIO, fields: Sequence[str], records: Sequence[dict], output: str) -> None:
    """``records`` as a JSON list of objects, CSV rows under a header, or an aligned table."""
    if output == "json":
        json.dump(list(records), out, indent=2)
        out.write("\n")
        return
    rows = [[_cell(record[field]) for field in fields] for record in records]
    if output == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(fields)
        writer.writerows(rows)
        return
    header = [field.upper() for field in fields]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    for row in [header, *rows]:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")


def _cell(value) -> str:
    if value is None:  # an empty cell, as JSON's null
        return ""
    if isinstance(value, (list, tuple)):
        return LIST_SEPARATOR.join(map(str, value))
    return str(value)
