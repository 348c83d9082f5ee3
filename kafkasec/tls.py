"""TLS contexts from Kafka's PEM settings (KIP-651): a listener's (SSL and SASL_SSL) and a client's.

A key and certificate chain come from ``ssl.keystore.key`` and ``ssl.keystore.certificate.chain``
(PEM text, as Kafka takes them inline) or from ``ssl.keystore.location`` (a PEM file holding the
key and the chain), the key decrypted with ``ssl.key.password`` when it is encrypted. Trusted
certificates come from ``ssl.truststore.certificates`` (PEM text) or ``ssl.truststore.location``.
``ssl.enabled.protocols`` names the TLS versions (default ``TLSv1.2,TLSv1.3``).

A listener needs the key and chain; ``ssl.client.auth`` is ``required`` (a client without a
certificate the truststore signs is refused at the handshake), ``requested`` (a certificate is
asked for, not required) or ``none``; as in Kafka, a setting prefixed ``listener.name.<listener>.``
wins for that listener. A client trusts its truststore (else the system's certificate
authorities), presents a key and chain when it has one (mutual TLS), and checks the server's
name unless ``ssl.endpoint.identification.algorithm`` is empty.

A listener re-reads its files when they change, or on SIGHUP: :mod:`kafkasec.server.certificates`.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from typing import Mapping

from kafkasec.settings import parse_list

CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def listener_setting(config: Mapping[str, object], listener_name: str, name: str) -> str | None:
    """``listener.name.<listener>.<name>`` if set, else ``<name>``, as text (None: unset)."""
    value = config.get(f"listener.name.{listener_name.lower()}.{name}", config.get(name))
    return None if value is None else str(value)


def server_ssl_context(config: Mapping[str, object], listener_name: str) -> ssl.SSLContext:
    """The TLS context of a listener; ValueError naming the setting that is missing or wrong."""

    def setting(name: str) -> str | None:
        return listener_setting(config, listener_name, name)

    context = _context(ssl.PROTOCOL_TLS_SERVER, setting)
    if not _load_key_and_chain(context, setting):
        raise ValueError("a TLS listener needs ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key")
    client_auth = (setting("ssl.client.auth") or "none").lower()
    if client_auth not in CLIENT_AUTH:
        raise ValueError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH)}, not {client_auth!r}")
    context.verify_mode = CLIENT_AUTH[client_auth]
    trusted_text, trusted_file = setting("ssl.truststore.certificates"), setting("ssl.truststore.location")
    if client_auth != "none":
        if trusted_text is None and trusted_file is None:
            raise ValueError(f"ssl.client.auth={client_auth} needs ssl.truststore.certificates or ssl.truststore.location")
        try:
            context.load_verify_locations(cafile=trusted_file, cadata=trusted_text)
        except (ssl.SSLError, OSError) as error:
            where = "" if trusted_file is None else f" from {trusted_file}"
            raise ValueError(f"the truststore of listener {listener_name} cannot be read{where}: {error}") from None
    return context


def client_ssl_context(config: Mapping[str, object]) -> ssl.SSLContext:
    """The TLS context of a client with Kafka's client ``ssl.*`` settings; ValueError naming the
    setting that is wrong."""

    def setting(name: str) -> str | None:
        value = config.get(name)
        return None if value is None else str(value)

    context = _context(ssl.PROTOCOL_TLS_CLIENT, setting)
    trusted_text, trusted_file = setting("ssl.truststore.certificates"), setting("ssl.truststore.location")
    try:
        if trusted_text is None and trusted_file is None:
            context.load_default_certs()
        else:
            context.load_verify_locations(cafile=trusted_file, cadata=trusted_text)
    except (ssl.SSLError, OSError) as error:
        raise ValueError(f"the client's truststore cannot be read: {error}") from None
    _load_key_and_chain(context, setting)
    # Kafka's default is "https": the server's certificate must name the host connected to.
    algorithm = setting("ssl.endpoint.identification.algorithm")
    context.check_hostname = algorithm is None or bool(algorithm.strip())
    return context


def _context(protocol: int, setting) -> ssl.SSLContext:
    """A context of ``protocol`` limited to ``ssl.enabled.protocols``, after the store types are checked."""
    for kind in ("ssl.keystore.type", "ssl.truststore.type"):
        if (setting(kind) or "PEM").upper() != "PEM":
            raise ValueError(f"{kind} = {setting(kind)!r}: kafkasec reads PEM keys and certificates only")
    context = ssl.SSLContext(protocol)
    versions = [part for part in parse_list(setting("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3") if part]
    unknown = [version for version in versions if version not in _PROTOCOLS]
    if unknown or not versions:
        raise ValueError(f"ssl.enabled.protocols names {', '.join(unknown) or 'nothing'}; kafkasec knows {', '.join(_PROTOCOLS)}")
    context.minimum_version = min(_PROTOCOLS[version] for version in versions)
    context.maximum_version = max(_PROTOCOLS[version] for version in versions)
    return context


def _load_key_and_chain(context: ssl.SSLContext, setting) -> bool:
    """Load the keystore's key and chain into ``context``; False when the settings name none."""
    chain, key, location = setting("ssl.keystore.certificate.chain"), setting("ssl.keystore.key"), setting("ssl.keystore.location")
    password = setting("ssl.key.password")
    if location is None and (chain is None or key is None):
        return False
    try:
        if location is not None:
            context.load_cert_chain(location, password=password)
            return True
        # The ssl module loads a key only from a file: the inline PEM goes through one that only
        # this process may read, removed at once.
        descriptor, path = tempfile.mkstemp(suffix=".pem")
        try:
            with os.fdopen(descriptor, "w", encoding="ascii") as file:
                file.write(f"{key}\n{chain}\n")
            context.load_cert_chain(path, password=password)
        finally:
            os.unlink(path)
    except (ssl.SSLError, OSError, UnicodeEncodeError) as error:
        where = "" if location is None else f" from {location}"
        raise ValueError(f"the key and certificate chain of ssl.keystore.* cannot be read{where}: {error}") from None
    return True
