"""ACL files for export and import: JSON (a list of objects) or CSV (a header, then one row each).

Both hold the records of :data:`kafkasec.cli.output.ACL_FIELDS`, with Kafka's enum names.
Reading checks every row before returning any, so an import is all of the file or none of it.
"""

from __future__ import annotations

import csv
import json
import os

from kafkasec.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkasec.authorizer.validation import validate_new_acl
from kafkasec.cli.options import (
    ACL_OPERATIONS,
    ACL_PATTERN_TYPES,
    PERMISSION_TYPES,
    RESOURCE_TYPES,
    CommandError,
    UsageError,
    enum_member,
)
from kafkasec.cli.output import ACL_FIELDS
from kafkasec.errors import KafkaError
from kafkasec.principals.principal import KafkaPrincipal

FILE_FORMATS = ("csv", "json")


def file_format(explicit: str | None, path: str | None, default: str | None = None) -> str:
    """--format if given, else the file's extension (.csv, .json), else ``default``."""
    if explicit:
        return explicit
    extension = os.path.splitext(path or "")[1].lower().lstrip(".")
    if extension in FILE_FORMATS:
        return extension
    if default is None:
        raise UsageError(f"cannot tell the format of {path!r} from its extension: pass --format csv or json")
    return default


def read_acl_file(path: str, file_format: str) -> list[AclBinding]:
    """Every ACL in the file; CommandError naming the first bad row (counted from 1) if any is bad."""
    with open(path, newline="", encoding="utf-8") as file:
        records = _csv_records(file, path) if file_format == "csv" else _json_records(file, path)
        bindings = []
        for number, record in enumerate(records, start=1):
            try:
                bindings.append(binding_from_record(record))
            except ValueError as error:
                raise CommandError(f"{path}: row {number}: {error}") from None
    return bindings


def _json_records(file, path: str) -> list:
    try:
        records = json.load(file)
    except ValueError as error:
        raise CommandError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(records, list):
        raise CommandError(f"{path}: expected a JSON list of ACL objects")
    return records


def _csv_records(file, path: str):
    reader = csv.DictReader(file)
    try:
        header = reader.fieldnames
    except csv.Error as error:
        raise CommandError(f"{path}: not valid CSV: {error}") from None
    if header is None or sorted(header) != sorted(ACL_FIELDS):
        raise CommandError(f"{path}: the CSV header must name the columns {','.join(ACL_FIELDS)}")
    number = 0
    try:
        for number, record in enumerate(reader, start=1):  # noqa: B007 (the line an error names)
            yield record
    except csv.Error as error:
        raise CommandError(f"{path}: row {number + 1}: not valid CSV: {error}") from None


def binding_from_record(record: object) -> AclBinding:
    """The ACL a record describes; ValueError with a one-line reason if it is not one Kafka would store."""
    if not isinstance(record, dict):
        raise ValueError(f"expected an object with the fields {', '.join(ACL_FIELDS)}")
    if None in record:
        raise ValueError("the row has more values than the header has columns")
    unknown = sorted(set(record) - set(ACL_FIELDS))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}")
    missing = [field for field in ACL_FIELDS if record.get(field) is None]
    if missing:
        raise ValueError(f"missing {missing[0]}")
    for field in ("resource_name", "principal", "host"):
        if not isinstance(record[field], str):
            raise ValueError(f"{field} must be a string, not {record[field]!r}")
    binding = AclBinding.of(
        enum_member(ResourceType, record["resource_type"], RESOURCE_TYPES, "resource_type"),
        record["resource_name"],
        enum_member(PatternType, record["pattern_type"], ACL_PATTERN_TYPES, "pattern_type"),
        str(KafkaPrincipal.parse(record["principal"])),
        record["host"],
        enum_member(AclOperation, record["operation"], ACL_OPERATIONS, "operation"),
        enum_member(AclPermissionType, record["permission_type"], PERMISSION_TYPES, "permission_type"),
    )
    try:
        validate_new_acl(binding)
    except KafkaError as error:
        raise ValueError(error.message) from None
    return binding
