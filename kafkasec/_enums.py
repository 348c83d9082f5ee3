"""The base of every Kafka enum in kafkasec: values are Kafka's codes, lookup is forgiving.

Kafka spells the same member three ways (``DESCRIBE_CONFIGS`` in Java, ``DescribeConfigs`` in
kafka-acls.sh and ACL strings, ``10`` on the wire); users should not have to know which one a
given API wants, so every enum accepts all three and nothing else.
"""

from __future__ import annotations

import enum


def _fold(name: str) -> str:
    # "DESCRIBE_CONFIGS", "describe-configs" and "DescribeConfigs" all fold to "describeconfigs".
    return name.replace("_", "").replace("-", "").lower()


class KafkaEnum(enum.IntEnum):
    """An IntEnum whose values are Kafka's codes; converts from a member, a name or a code."""

    @classmethod
    def coerce(cls, value: object):
        """Return the member for ``value`` (member, name in any case or CamelCase, or code)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, bool):
            # bool is an int subclass: True would silently become code 1.
            raise ValueError(f"{value!r} is not a valid {cls.__name__}")
        return cls(value)

    @classmethod
    def _missing_(cls, value: object):
        if isinstance(value, str):
            folded = _fold(value.strip())
            for name, member in cls.__members__.items():
                if _fold(name) == folded:
                    return member
        raise ValueError(
            f"{value!r} is not a valid {cls.__name__}: expected a member of {cls.__name__}, one of the "
            f"names {', '.join(cls.__members__)} (any case, or CamelCase such as "
            f"{_camel(next(reversed(cls.__members__)))!r}), or one of the codes "
            f"{', '.join(str(int(m)) for m in cls)}"
        )

    @property
    def camel_name(self) -> str:
        """The name as kafka-acls.sh prints it, e.g. ``DescribeConfigs``."""
        return _camel(self.name)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
