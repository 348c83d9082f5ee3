"""How an error goes on the wire: one encoder, Kafka's ``ApiError.fromThrowable``.

Every response field pair ``error_code``/``error_message`` that kafkasec writes comes from
:class:`ApiError`. As Kafka's, it sends no message when the message would only repeat the
error's default text, and never one for UNKNOWN_SERVER_ERROR (an unexpected exception's text
may hold server details; it goes to the log instead).
"""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from kafkasec.errors import KafkaError, KafkaErrorCode
from kafkasec.protocol import wire


def _error_code(code: KafkaErrorCode | int | str) -> KafkaErrorCode:
    # Not KafkaErrorCode.coerce itself: attrs' mypy plugin reads the signature of a plain
    # function converter, not of a classmethod.
    return KafkaErrorCode.coerce(code)


@frozen
class ApiError:
    """An error code and the message a response carries with it (None: no message)."""

    error_code: KafkaErrorCode = field(converter=_error_code)
    message: str | None = None

    NONE: ClassVar[ApiError]

    @classmethod
    def from_exception(cls, error: BaseException | None) -> ApiError:
        """Kafka's ``ApiError.fromThrowable``. A KafkaError keeps its code, and its message
        unless generic; an error carrying a code of its own (the state's StateError) keeps the
        code alone; anything else is UNKNOWN_SERVER_ERROR without a message."""
        if error is None:
            return cls.NONE
        if isinstance(error, KafkaError):
            return cls.of(error.error_code, error.message)
        code = getattr(error, "error_code", None)
        if isinstance(code, KafkaErrorCode):
            return cls(code)
        return cls(KafkaErrorCode.UNKNOWN_SERVER_ERROR)

    @classmethod
    def of(cls, error_code: KafkaErrorCode | int | str, message: str | None = None) -> ApiError:
        """``error_code`` with ``message``, dropped as fromThrowable drops it (generic text, or
        UNKNOWN_SERVER_ERROR)."""
        code = KafkaErrorCode.coerce(error_code)
        if message == code.message or code is KafkaErrorCode.UNKNOWN_SERVER_ERROR:
            message = None
        return cls(code, message)

    @property
    def is_success(self) -> bool:
        return self.error_code is KafkaErrorCode.NONE

    def fields(self) -> dict:
        """``error_code`` and ``error_message`` as a response schema takes them."""
        return {"error_code": wire.error_code(self.error_code), "error_message": self.message}

    def code_field(self) -> dict:
        """``error_code`` alone, for the responses whose schema has no message."""
        return {"error_code": wire.error_code(self.error_code)}


ApiError.NONE = ApiError(KafkaErrorCode.NONE)

__all__ = ["ApiError"]
