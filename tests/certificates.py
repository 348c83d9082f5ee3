"""Certificates for tests, made with cryptography: subjects shaped as a test needs them."""

import datetime

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ed25519

_KEY = ed25519.Ed25519PrivateKey.generate()
A = x509.NameAttribute


def self_signed(*rdns) -> x509.Certificate:
    """A self-signed certificate whose subject has these RDNs, first (the root) to last; each is
    a NameAttribute or a list of them (a multi-valued RDN)."""
    name = x509.Name([x509.RelativeDistinguishedName(r if isinstance(r, list) else [r]) for r in rdns])
    start = datetime.datetime(2024, 1, 1)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(_KEY.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .sign(_KEY, None)
    )
