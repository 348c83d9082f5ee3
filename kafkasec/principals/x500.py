"""A certificate's subject DN written as Java's ``X500Principal.getName()`` writes it (RFC 2253):
the text Kafka's SSL mapping rules are matched against, read from the DER itself.
"""

from __future__ import annotations

from typing import Iterator

from cryptography import x509

# The attribute keywords Java's X500Principal writes in RFC 2253 form; any other attribute
# type is written as its dotted OID, and its value then as '#' and the hex of its DER.
_RFC2253_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# PrintableString, T61String, IA5String, GeneralString, BMPString, UTF8String: the tags Java
# writes as text. Java decodes the content octets of each as UTF-8, whatever the type says.
_TEXT_TAGS = frozenset({0x13, 0x14, 0x16, 0x1B, 0x1E, 0x0C})
_ESCAPED = ',=+<>#;"\\'
_SEQUENCE, _SET = 0x30, 0x31


def _element(data: bytes, position: int, end: int) -> tuple[int, int, int]:
    """(tag, content start, element end) of the DER element at ``position``."""
    try:
        tag = data[position]
        position += 1
        if tag & 0x1F == 0x1F:  # high tag number: base-128 octets follow
            while data[position] & 0x80:
                position += 1
            position += 1
        length = data[position]
        position += 1
        if length & 0x80:
            size = length & 0x7F
            length = int.from_bytes(data[position:position + size], "big")
            position += size
    except IndexError:
        raise ValueError("the certificate's subject is truncated") from None
    if position + length > end:
        raise ValueError("the certificate's subject is truncated")
    return tag, position, position + length


def _children(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(tag, element start, content start, element end) of each element in data[start:end]."""
    while start < end:
        tag, content, element_end = _element(data, start, end)
        yield tag, start, content, element_end
        start = element_end


def _oid(content: bytes) -> str:
    numbers, value = [], 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            numbers.append(value)
            value = 0
    first = numbers[0] if numbers else 0
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(n) for n in head + numbers[1:])


def _value_text(value: str) -> str:
    escaped = "".join("\\00" if c == "\0" else "\\" + c if c in _ESCAPED else c for c in value)
    lead = len(escaped) - len(escaped.lstrip(" \r"))
    trail = len(escaped) - len(escaped.rstrip(" \r"))
    if lead == len(escaped):  # nothing but spaces and carriage returns: every one is escaped
        return "".join("\\" + c for c in escaped)
    middle = escaped[lead:len(escaped) - trail]
    return "".join("\\" + c for c in escaped[:lead]) + middle + "".join("\\" + c for c in escaped[len(escaped) - trail:])


def _attribute_text(data: bytes, start: int, end: int) -> str:
    children = list(_children(data, start, end))
    if len(children) != 2 or children[0][0] != 0x06:
        raise ValueError("an attribute of the certificate's subject is not an OID and a value")
    _, _, oid_content, oid_end = children[0]
    tag, value_start, value_content, value_end = children[1]
    oid = _oid(data[oid_content:oid_end])
    keyword = _RFC2253_KEYWORDS.get(oid)
    if keyword is None or tag not in _TEXT_TAGS:
        return f"{keyword or oid}=#{data[value_start:value_end].hex()}"
    return f"{keyword}={_value_text(data[value_content:value_end].decode('utf-8', errors='replace'))}"


def _subject_der_span(tbs: bytes) -> tuple[int, int]:
    """Content start and end of the subject Name inside a TBSCertificate."""
    _, content, end = _element(tbs, 0, len(tbs))
    fields = _children(tbs, content, end)
    tag, _, _, _ = next(fields)
    if tag == 0xA0:  # explicit version
        next(fields)  # serial number
    for _ in range(3):  # signature algorithm, issuer, validity
        next(fields)
    tag, _, subject_content, subject_end = next(fields)
    if tag != _SEQUENCE:
        raise ValueError("the certificate's subject is not a SEQUENCE")
    return subject_content, subject_end


def x500_principal_name(certificate: x509.Certificate) -> str:
    """The subject DN exactly as Java's ``X500Principal.getName()`` writes it (RFC 2253).

    RDNs last to first, joined by ``,``; the AVAs of a multi-valued RDN in their encoded order,
    joined by ``+``. Only CN, C, L, ST, O, OU, STREET, DC and UID are written as keywords; any
    other type (e.g. emailAddress) as its dotted OID with ``#`` and the hex of the value's DER.
    In values, ``, = + < > # ; " \\`` get a backslash, NUL is written ``\\00``, and leading and
    trailing spaces and carriage returns get a backslash each. The content octets of every
    string type are decoded as UTF-8 (with U+FFFD for bad bytes), as Java does, so a BMPString
    comes out as Java prints it rather than as the text it holds.
    """
    if not isinstance(certificate, x509.Certificate):
        raise TypeError(f"x500_principal_name takes a cryptography x509.Certificate, not {certificate!r}")
    tbs = certificate.tbs_certificate_bytes
    start, end = _subject_der_span(tbs)
    names = []
    for tag, _, rdn_content, rdn_end in _children(tbs, start, end):
        if tag != _SET:
            raise ValueError("an RDN of the certificate's subject is not a SET")
        names.append(
            "+".join(_attribute_text(tbs, content, element_end) for _, _, content, element_end in _children(tbs, rdn_content, rdn_end))
        )
    return ",".join(reversed(names))


__all__ = ["x500_principal_name"]
