"""Certificates for tests, made with cryptography: subjects shaped as a test needs them."""

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

_KEY = ed25519.Ed25519PrivateKey.generate()
A = x509.NameAttribute
VALIDITY = datetime.timedelta(days=2)
"""How long the certificates a TestCertificateAuthority issues are valid, unless told."""


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


class TestCertificateAuthority:
    """A CA for TLS tests: it issues server certificates for 127.0.0.1 and client certificates
    with any subject, and writes PEM files where librdkafka and kafka-python read them."""

    __test__ = False  # not a test class, whatever pytest makes of its name

    def __init__(self, directory):
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([A(NameOID.COMMON_NAME, "kafkasec test CA")])
        self.certificate = self._build(name, self._key.public_key(), ca=True)
        self.ca_file = self._write("ca.pem", self.certificate_pem)

    @property
    def certificate_pem(self) -> str:
        return self.certificate.public_bytes(serialization.Encoding.PEM).decode()

    def _build(self, subject, public_key, *, ca=False, ip=None, valid_for=VALIDITY):
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(x509.Name([A(NameOID.COMMON_NAME, "kafkasec test CA")]))
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + valid_for)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if ip is not None:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
        return builder.sign(self._key, hashes.SHA256())

    def issue(self, name: str, *rdns, ip=None) -> tuple[str, str]:
        """A key and certificate for ``rdns`` (NameAttributes, root first), written as
        ``<name>.key.pem`` and ``<name>.pem``; returns the two paths."""
        key_pem, certificate_pem, _ = self.issue_pem(*rdns, ip=ip)
        return self._write(f"{name}.key.pem", key_pem), self._write(f"{name}.pem", certificate_pem)

    def issue_pem(self, *rdns, ip=None, valid_for=VALIDITY) -> tuple[str, str, x509.Certificate]:
        """A new key and a certificate for it, for ``rdns`` and valid from now for ``valid_for``:
        the key's PEM text, the certificate's, and the certificate."""
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = self._build(x509.Name([x509.RelativeDistinguishedName([r]) for r in rdns]), key.public_key(), ip=ip,
                                  valid_for=valid_for)
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        return key_pem.decode(), certificate.public_bytes(serialization.Encoding.PEM).decode(), certificate

    def _write(self, file_name: str, text: str) -> str:
        path = self.directory / file_name
        path.write_text(text, encoding="ascii")
        return str(path)
