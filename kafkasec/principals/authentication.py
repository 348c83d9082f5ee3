"""What a connection proved when it authenticated: Kafka's AuthenticationContext, one class per
security protocol. A principal builder (``kafkasec_build_principal``) turns one into a principal.

Kafka's contexts hold live objects (an SSLSession, a SaslServer); these hold what a principal
builder reads from them: the client certificate, or the SASL mechanism and authorization id.
"""

from __future__ import annotations

from attrs import field, frozen, validators
from cryptography import x509

from kafkasec.context import java_host_address

SCRAM_MECHANISMS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")

_listener = validators.instance_of(str)


def _certificate(value: object) -> x509.Certificate | None:
    """A certificate from a cryptography Certificate, DER bytes or PEM bytes; None stays None."""
    if value is None or isinstance(value, x509.Certificate):
        return value
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"peer_certificate must be a cryptography x509.Certificate, DER or PEM bytes, or None, not {value!r}"
        )
    data = bytes(value)
    pem = data.lstrip().startswith(b"-----BEGIN")
    try:
        return x509.load_pem_x509_certificate(data) if pem else x509.load_der_x509_certificate(data)
    except ValueError as error:
        raise ValueError(f"peer_certificate is not a {'PEM' if pem else 'DER'} X.509 certificate: {error}") from None


@frozen
class PlaintextAuthenticationContext:
    """A PLAINTEXT connection: nothing was proved (Kafka's principal: ``User:ANONYMOUS``)."""

    client_address: str = field(converter=java_host_address)
    listener_name: str = field(default="PLAINTEXT", validator=_listener)

    @property
    def security_protocol(self) -> str:
        return "PLAINTEXT"


@frozen
class SslAuthenticationContext:
    """A TLS connection. ``peer_certificate`` is the client's verified certificate (a
    cryptography Certificate, or DER or PEM bytes), or None when the client sent none
    (``ssl.client.auth`` not ``required``)."""

    peer_certificate: x509.Certificate | None = field(converter=_certificate)
    client_address: str = field(converter=java_host_address)
    listener_name: str = field(default="SSL", validator=_listener)

    @property
    def security_protocol(self) -> str:
        return "SSL"


def _token_needs_scram(instance, attribute, value):
    if value and instance.mechanism not in SCRAM_MECHANISMS:
        raise ValueError(
            f"only a SCRAM login ({', '.join(sorted(SCRAM_MECHANISMS))}) can use a delegation token, "
            f"not {instance.mechanism}"
        )


@frozen
class SaslAuthenticationContext:
    """A SASL login: the mechanism (e.g. ``GSSAPI``, ``PLAIN``, ``SCRAM-SHA-256``) and the
    authorization id the SASL server settled on. ``token_authenticated`` is True for a SCRAM
    login with a delegation token (KIP-48)."""

    mechanism: str = field(validator=validators.instance_of(str))
    authorization_id: str = field(validator=validators.instance_of(str))
    client_address: str = field(converter=java_host_address)
    listener_name: str = field(default="SASL_PLAINTEXT", validator=_listener)
    security_protocol: str = field(default="SASL_PLAINTEXT", validator=validators.in_(SASL_PROTOCOLS))
    token_authenticated: bool = field(
        default=False, validator=[validators.instance_of(bool), _token_needs_scram]
    )


__all__ = [
    "SASL_PROTOCOLS",
    "SCRAM_MECHANISMS",
    "PlaintextAuthenticationContext",
    "SaslAuthenticationContext",
    "SslAuthenticationContext",
]
