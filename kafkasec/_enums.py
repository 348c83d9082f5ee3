"""The base of every Kafka enum in kafkasec: values are Kafka's codes, lookup is forgiving.

Kafka spells the same member three ways (``DESCRIBE_CONFIGS`` in Java, ``DescribeConfigs`` in
kafka-acls.sh and ACL strings, ``10`` on the wire); users should not have to know which one a
given API wants, so every enum accepts all three and nothing else.
"""

from __future__ import annotations

import enum


class KafkaEnum(enum.IntEnum):
    """An IntEnum whose values are Kafka's codes; converts from a member, a name or a code."""

    @classmethod
    def coerce(cls, value: object):
        """Return the member for ``value``: a member, its name in any case, its CamelCase name
        (``DescribeConfigs``, any case), or its code. Anything else is a ValueError."""
        if isinstance(value, cls):
            return value
        # A member of another enum is almost always swapped arguments, and bool/float are not
        # codes even though Python would happily compare them equal to one.
        if isinstance(value, (enum.Enum, bool)) or not isinstance(value, (int, str)):
            raise _invalid(cls, value)
        return cls(value)  # type: ignore[arg-type]  # a name reaches _missing_ below

    @classmethod
    def _missing_(cls, value: object):
        if isinstance(value, str):
            member = _names(cls).get(value.strip().lower())
            if member is not None:
                return member
        raise _invalid(cls, value)

    @property
    def camel_name(self) -> str:
        """The name as kafka-acls.sh prints it, e.g. ``DescribeConfigs``."""
        return _camel(self.name)


_NAMES: dict[type, dict[str, KafkaEnum]] = {}


def _names(cls) -> dict[str, KafkaEnum]:
    """Lower-cased spellings of each member: "describe_configs" and "describeconfigs"."""
    names = _NAMES.get(cls)
    if names is None:
        names = {}
        for name, member in cls.__members__.items():
            names[name.lower()] = member
            names[_camel(name).lower()] = member
        _NAMES[cls] = names
    return names


def _invalid(cls, value: object) -> ValueError:
    return ValueError(
        f"{value!r} is not a valid {cls.__name__}: expected a member of {cls.__name__}, one of the "
        f"names {', '.join(cls.__members__)} (any case, or CamelCase such as "
        f"{_camel(next(reversed(cls.__members__)))!r}), or one of the codes "
        f"{', '.join(str(int(m)) for m in cls)}"
    )


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
