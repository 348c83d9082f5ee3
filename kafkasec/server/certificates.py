"""A listener's TLS certificate replaced without a restart, as Kafka updates a listener's
keystore dynamically (KIP-226).

:class:`ReloadingSslContext` holds the :class:`ssl.SSLContext` a listener accepts new
connections with (built by :func:`kafkasec.tls.server_ssl_context`) and builds a new one from
the same settings when the files they name change (``ssl.keystore.location``,
``ssl.truststore.location``), or when told to (:func:`reload_listener_certificates`:
``kafkasec serve`` on SIGHUP). A connection keeps the context its handshake used: open
connections keep their certificate, new ones get the new one. Inline PEM settings
(``ssl.keystore.key``, ``ssl.truststore.certificates``) are fixed for the process's life, as
Kafka's PEM stores are.

The files are looked at (``os.stat``: device, inode, size, modification time) when a
connection is accepted, at most once a second: no timer, nothing done while the listener is
idle. A file renamed over the old one, or rewritten in place, is seen either way.

A new keystore replaces the old one only if it passes the checks Kafka's SslFactory makes of a
reconfigured keystore: it loads, with a key that matches its certificate (OpenSSL's check); its
certificate's subject is the old one's unless ``ssl.allow.dn.changes`` is true; its subject
alternative names include all of the old one's unless ``ssl.allow.san.changes`` is true. And,
beyond Kafka, its certificate has not expired (every client would refuse it). A new truststore
must load. A refused change is logged once, at WARNING on ``kafkasec.server``, naming the
listener, the file and why; the old context stays until the files change again. Files caught
half-written (they changed while being read) are neither taken nor refused: the next look
reads them whole.
"""

from __future__ import annotations

import datetime
import logging
import os
import ssl
import time
import weakref
from typing import Mapping

from cryptography import x509

from kafkasec.settings import parse_bool
from kafkasec.tls import listener_setting, server_ssl_context

log = logging.getLogger("kafkasec.server")

CHECK_INTERVAL_S = 1.0
"""The files are looked at, when a connection is accepted, at most this often."""
KEYSTORE_LOCATION = "ssl.keystore.location"
TRUSTSTORE_LOCATION = "ssl.truststore.location"
ALLOW_DN_CHANGES = "ssl.allow.dn.changes"
ALLOW_SAN_CHANGES = "ssl.allow.san.changes"

FileStamp = tuple[int, int, int, int] | None
"""A file's (device, inode, size, modification time in ns); None when it cannot be looked at."""

# One context per listener (Kafka has one SslFactory per listener name): a gateway's listeners
# for the upstream brokers share their bootstrap listener's, so a change is read and logged once.
_LISTENERS: weakref.WeakValueDictionary[tuple[int, str], ReloadingSslContext] = weakref.WeakValueDictionary()


def reload_listener_certificates(reason: str) -> None:
    """Every listener of this process re-reads its TLS files now, changed or not; ``reason``
    (``"SIGHUP"``) goes into the log lines."""
    for listener in list(_LISTENERS.values()):
        listener.reload(reason)


class ReloadingSslContext:
    """The TLS context of listener ``listener_name`` under ``config`` (Kafka's ``ssl.*``
    settings), re-read when its files change. Built with :meth:`of_listener`, which gives the
    listeners of one name and config one shared instance; ValueError, as from
    :func:`~kafkasec.tls.server_ssl_context`, when the settings are wrong at start-up."""

    def __init__(self, config: Mapping[str, object], listener_name: str):
        self.listener_name = listener_name
        self._config = config
        self._files = {name: path for name in (KEYSTORE_LOCATION, TRUSTSTORE_LOCATION)
                       if (path := listener_setting(config, listener_name, name)) is not None}
        self._allow_dn_changes = self._setting_is_true(ALLOW_DN_CHANGES)
        self._allow_san_changes = self._setting_is_true(ALLOW_SAN_CHANGES)
        self._stamps = self._look()
        self._refused: dict[str, FileStamp] | None = None
        self._looked_at = time.monotonic()
        self.context = server_ssl_context(config, listener_name)
        self.certificate = self._read_certificate()
        """The certificate new connections are served (the keystore's first)."""

    @classmethod
    def of_listener(cls, config: Mapping[str, object], listener_name: str) -> ReloadingSslContext:
        """The context of this listener, made on first use."""
        # The key is the config's identity: an entry lives as long as its context, which holds
        # the config, so no other object can have that id meanwhile.
        key = (id(config), listener_name)
        listener = _LISTENERS.get(key)
        if listener is None:
            listener = _LISTENERS[key] = cls(config, listener_name)
        return listener

    def for_new_connection(self) -> ssl.SSLContext:
        """The context to accept a connection with, after a look at the files if the last was
        more than :data:`CHECK_INTERVAL_S` ago."""
        now = time.monotonic()
        if now - self._looked_at >= CHECK_INTERVAL_S:
            self._looked_at = now
            stamps = self._look()
            if stamps != self._stamps and stamps != self._refused:
                self._replace(stamps, "its files changed")
        return self.context

    def reload(self, reason: str) -> None:
        """Re-read the files now, changed or not (``reason`` goes into the log line)."""
        self._replace(self._look(), reason)

    def _look(self) -> dict[str, FileStamp]:
        return {name: _stamp(path) for name, path in self._files.items()}

    def _replace(self, stamps: dict[str, FileStamp], reason: str) -> None:
        """Build the context anew from files that looked like ``stamps``, and take it if it
        passes the checks. On the event loop: a few milliseconds, once per change."""
        try:
            context = server_ssl_context(self._config, self.listener_name)
            certificate = self._read_certificate()
            self._check_replacement(certificate)
        except ValueError as error:
            if self._look() == stamps:
                self._refused = stamps
                log.warning("listener %s keeps its TLS certificate (%s): %s", self.listener_name, reason, error)
            return
        if self._look() != stamps:
            return  # read while being written: the next look reads the finished files
        self.context, self.certificate, self._stamps, self._refused = context, certificate, stamps, None
        log.info("listener %s serves a new TLS certificate (%s): %s, serial %X, valid until %s", self.listener_name, reason,
                 certificate.subject.rfc4514_string(), certificate.serial_number, f"{certificate.not_valid_after_utc:%Y-%m-%d %H:%M:%S} UTC")

    def _keystore(self) -> str:
        """Where the key and certificate come from, for messages."""
        return self._files.get(KEYSTORE_LOCATION, "ssl.keystore.certificate.chain")

    def _read_certificate(self) -> x509.Certificate:
        """The keystore's certificate: the first of the chain (OpenSSL serves it as the leaf)."""
        try:
            location = self._files.get(KEYSTORE_LOCATION)
            if location is None:
                pem = str(listener_setting(self._config, self.listener_name, "ssl.keystore.certificate.chain")).encode()
            else:
                with open(location, "rb") as file:
                    pem = file.read()
            return x509.load_pem_x509_certificates(pem)[0]
        except (OSError, ValueError) as error:
            raise ValueError(f"no certificate can be read from {self._keystore()}: {error}") from None

    def _check_replacement(self, new: x509.Certificate) -> None:
        """ValueError naming the keystore unless ``new`` may replace the certificate served."""
        old, keystore = self.certificate, self._keystore()
        if new.not_valid_after_utc <= datetime.datetime.now(datetime.timezone.utc):
            raise ValueError(f"the certificate in {keystore} expired at {new.not_valid_after_utc:%Y-%m-%d %H:%M:%S} UTC")
        # As Kafka compares X500Principals: equal names, or RFC 2253 strings equal ignoring case.
        same_subject = new.subject == old.subject or new.subject.rfc4514_string().casefold() == old.subject.rfc4514_string().casefold()
        if not same_subject and not self._allow_dn_changes:
            raise ValueError(f"the certificate in {keystore} names the subject {new.subject.rfc4514_string()!r}, not the current "
                             f"{old.subject.rfc4514_string()!r} ({ALLOW_DN_CHANGES}=false)")
        missing = _alternative_names(old) - _alternative_names(new)
        if missing and not self._allow_san_changes:
            names = ", ".join(sorted(str(name.value) for name in missing))
            raise ValueError(f"the certificate in {keystore} lacks the current one's subject alternative names {names} "
                             f"({ALLOW_SAN_CHANGES}=false)")

    def _setting_is_true(self, name: str) -> bool:
        return parse_bool(name, listener_setting(self._config, self.listener_name, name) or False)


def _stamp(path: str) -> FileStamp:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _alternative_names(certificate: x509.Certificate) -> frozenset[x509.GeneralName]:
    try:
        return frozenset(certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
    except x509.ExtensionNotFound:
        return frozenset()
