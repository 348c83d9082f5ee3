"""Principals of one node, through the plugins: built from a connection's authentication
(``kafkasec_build_principal``) and carried in KIP-590 envelopes (the serde hooks)."""

from __future__ import annotations

from attrs import evolve

from kafkasec.errors import KafkaError, PrincipalDeserializationError
from kafkasec.principals.principal import KafkaPrincipal


class PrincipalService:
    """``security`` is only what the hooks are called with."""

    def __init__(self, security, hook):
        self._security = security
        self._hook = hook

    def build_principal(self, context) -> KafkaPrincipal:
        """The principal of an authenticated connection, from an authentication context of
        :mod:`kafkasec.principals.authentication`.

        As Kafka's SaslServerAuthenticator does, a SCRAM login with a delegation token gives a
        principal marked ``token_authenticated``, whichever plugin built it.
        """
        principal = self._hook.kafkasec_build_principal(security=self._security, context=context)
        if principal is None:
            raise ValueError(f"no plugin built a principal for {context!r}")
        if getattr(context, "token_authenticated", False) and not principal.token_authenticated:
            principal = evolve(principal, token_authenticated=True)
        return principal

    def serialize_principal(self, principal: KafkaPrincipal) -> bytes:
        """The bytes that carry ``principal`` in a KIP-590 envelope."""
        if not isinstance(principal, KafkaPrincipal):
            raise TypeError(f"serialize_principal takes a KafkaPrincipal, not {principal!r}")
        data = self._hook.kafkasec_serialize_principal(security=self._security, principal=principal)
        if data is None:
            raise ValueError(f"no plugin serialized the principal {principal}")
        return data

    def deserialize_principal(self, data: bytes) -> KafkaPrincipal:
        """The principal in envelope bytes; anything unreadable is PRINCIPAL_DESERIALIZATION_FAILURE
        (97), whichever plugin failed and however."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"deserialize_principal takes bytes, not {type(data).__name__}")
        try:
            principal = self._hook.kafkasec_deserialize_principal(security=self._security, data=bytes(data))
        except KafkaError:
            raise
        except Exception as error:
            raise PrincipalDeserializationError(f"the principal data could not be read: {error}") from error
        if principal is None:
            raise PrincipalDeserializationError("no plugin could read the principal data")
        return principal


__all__ = ["PrincipalService"]
