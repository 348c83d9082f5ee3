"""Kafka's ``ssl.principal.mapping.rules``: from a client certificate's subject to a short name.

Two things a broker does with a certificate are reproduced here:

* :func:`x500_principal_name` writes the subject DN as Java's ``X500Principal.getName()`` does
  (RFC 2253 form), the text Kafka's rules are matched against and the principal name under the
  ``DEFAULT`` rule.
* :class:`SslPrincipalMapper` parses the rules exactly as Kafka's ``SslPrincipalMapper`` does
  (the same rule-splitting regular expressions, so commas, escapes and empty rules are read the
  same way) and applies the first rule that matches.

Kafka's rules are Java regular expressions and Java replacement strings. :func:`compile_java_regex`
translates a Java regular expression into an equivalent Python one, or refuses it at config time
when Python's ``re`` cannot mean the same thing. Supported, with Java's meaning: literals and
escapes (``\\t \\n \\r \\f \\a \\e \\0oct \\xhh \\x{h..h} \\uhhhh \\cX``, ``\\Q...\\E``), ``.`` (which,
as in Java, matches no line terminator), ``^ $ \\A \\z \\Z \\b \\B``, ``\\d \\s \\w`` and their
negations (ASCII, as in Java), character classes with ranges and negation, groups (capturing,
``(?:``, named ``(?<name>``, atomic ``(?>``, lookahead, fixed-width lookbehind), back references
(``\\1``, ``\\k<name>``), greedy, lazy and possessive quantifiers, and the inline flags ``i``
(ASCII case folding, Java's default) and ``s``. Refused: Unicode properties (``\\p{..}``), class
union and intersection (``[a[b]]``, ``[a&&b]``), ``\\G \\R \\X \\h \\v \\N{..}``, the flags ``d m u x U``,
variable-width lookbehind, quantified anchors or lookarounds, back references to a group not yet
closed or numbered 100 and above. ``\\b`` is Java 19's (word characters are ``\\w``).
"""

from __future__ import annotations

import re
import string
from typing import Iterator

from attrs import field, frozen, validators
from cryptography import x509

DEFAULT_RULE = "DEFAULT"


class NoMatchingRule(ValueError):
    """No rule maps the name (Kafka's NoMatchingRule). A broker refuses the connection."""


# ---------------------------------------------------------------------------- Java regex

_OCTAL = "01234567"
_HEX = string.hexdigits
_ASCII_LETTERS = string.ascii_letters
_DIGITS = string.digits
_INT_MAX = 2**31 - 1  # Java's Integer.parseInt limit, where Kafka reads numbers from rules

# Java's "." matches any character but these line terminators (without DOTALL).
_DOT = r"[^\n\r\x85\u2028\u2029]"
# Java's "$" and "\Z" without MULTILINE: at the end of the input, or before a line terminator
# (or \r\n) that ends it, but never between the \r and \n of a final \r\n.
_DOLLAR = r"(?=(?:\r\n|[\n\r\x85\u2028\u2029])?\Z)(?!(?<=\r)\n\Z)"
_CLASS_SHORTHANDS = "dDsSwW"  # ASCII in Java and, with re.ASCII, in Python
_SUPPORTED_FLAGS = "is"
_JAVA_FLAGS = "idmsuxU"


class _JavaRegexError(ValueError):
    pass


class _JavaRegexTranslator:
    """One pass over a Java regular expression, writing the Python one."""

    def __init__(self, pattern: str):
        self.src = pattern
        self.pos = 0
        self.groups_opened = 0
        self.open_groups: list[int] = []
        self.group_names: set[str] = set()
        self.closed_names: set[str] = set()

    def fail(self, message: str) -> _JavaRegexError:
        return _JavaRegexError(f"{message} (at index {self.pos})")

    def at(self, chars: str) -> bool:
        """Whether the next character is one of ``chars`` (False at the end)."""
        return self.pos < len(self.src) and self.src[self.pos] in chars

    def take(self) -> str:
        if self.pos >= len(self.src):
            raise self.fail("the pattern ends too early")
        char = self.src[self.pos]
        self.pos += 1
        return char

    def take_while(self, chars: str) -> str:
        start = self.pos
        while self.at(chars):
            self.pos += 1
        return self.src[start:self.pos]

    def translate(self) -> str:
        out: list[str] = []
        flags = ""
        # Per open group: the flags to restore, its number if capturing, its name if named,
        # and whether it is a lookaround (which is not quantified here).
        stack: list[tuple[str, int | None, str | None, bool]] = []
        quantifiable = False
        while self.pos < len(self.src):
            if self.at("*+?{"):
                if not quantifiable:
                    char = self.src[self.pos]
                    raise self.fail("Illegal repetition" if char == "{" else f"Dangling meta character {char!r}")
                out.append(self.quantifier())
                quantifiable = False
                continue
            char = self.take()
            if char == "\\":
                text, quantifiable = self.escape(flags)
                out.append(text)
            elif char == "[":
                out.append(_case(self.character_class(), flags))
                quantifiable = True
            elif char == "(":
                if self.at("?") and self.flag_group_ahead():
                    self.take()
                    flags = self.inline_flags(flags)
                    self.take()  # the ")" of "(?i)": Java keeps the flags until the enclosing group ends
                    quantifiable = False
                    continue
                text, number, name, lookaround, inner_flags = self.group_head(flags)
                stack.append((flags, number, name, lookaround))
                flags = inner_flags
                out.append(text)
                quantifiable = False
            elif char == ")":
                if not stack:
                    raise self.fail("Unmatched closing ')'")
                flags, number, name, lookaround = stack.pop()
                if number is not None:
                    self.open_groups.remove(number)
                if name is not None:
                    self.closed_names.add(name)
                out.append(")")
                quantifiable = not lookaround
            elif char in "|^":
                out.append(char)
                quantifiable = False
            elif char == "$":
                out.append(_DOLLAR)
                quantifiable = False
            elif char == ".":
                out.append("(?s:.)" if "s" in flags else _DOT)
                quantifiable = True
            else:
                out.append(_case(re.escape(char), flags))
                quantifiable = True
        if stack:
            raise self.fail("Unclosed group")
        return "".join(out)

    def quantifier(self) -> str:
        text = self.take()
        if text == "{":
            low = high = self.take_while(_DIGITS)
            if self.at(","):
                self.take()
                high = self.take_while(_DIGITS)
            if not low:
                raise self.fail("Illegal repetition")
            if not self.at("}"):
                raise self.fail("Unclosed counted closure")
            self.take()
            if high and int(high) < int(low):
                raise self.fail("Illegal repetition range")
            text = f"{{{low}}}" if high == low else f"{{{low},{high}}}"
        if self.at("?+"):
            text += self.take()  # lazy or possessive
        if self.at("*+?{"):
            raise self.fail(f"Dangling meta character {self.src[self.pos]!r}")
        return text

    def flag_group_ahead(self) -> bool:
        """Whether "(?" starts a flags-only group such as "(?i)" or "(?-s)"."""
        end = self.pos + 1
        while end < len(self.src) and self.src[end] in _JAVA_FLAGS + "-":
            end += 1
        return end < len(self.src) and self.src[end] == ")"

    def group_head(self, flags: str) -> tuple[str, int | None, str | None, bool, str]:
        """(Python text, capturing number, name, is lookaround, flags inside) of the group
        whose "(" was just read."""
        if not self.at("?"):
            return "(", self.open_group(), None, False, flags
        self.take()
        kind = self.take()
        if kind in ":>":
            return f"(?{kind}", None, None, False, flags
        if kind in "=!":
            return f"(?{kind}", None, None, True, flags
        if kind == "<":
            if self.at("=!"):
                return f"(?<{self.take()}", None, None, True, flags
            name = self.group_name()
            if name in self.group_names:
                raise self.fail(f"Named capturing group <{name}> is already defined")
            self.group_names.add(name)
            return f"(?P<{name}>", self.open_group(), name, False, flags
        self.pos -= 1
        inner_flags = self.inline_flags(flags)
        if self.take() != ":":
            raise self.fail("Unknown inline modifier")
        return "(?:", None, None, False, inner_flags

    def open_group(self) -> int:
        self.groups_opened += 1
        self.open_groups.append(self.groups_opened)
        return self.groups_opened

    def group_name(self) -> str:
        if not self.at(_ASCII_LETTERS):
            raise self.fail("capturing group name does not start with a Latin letter")
        name = self.take_while(_ASCII_LETTERS + _DIGITS)
        if self.take() != ">":
            raise self.fail("named capturing group is missing trailing '>'")
        return name

    def inline_flags(self, flags: str) -> str:
        current = set(flags)
        turned_on = True
        while self.at(_JAVA_FLAGS + "-"):
            char = self.take()
            if char == "-":
                if not turned_on:
                    raise self.fail("Unknown inline modifier")
                turned_on = False
            elif char not in _SUPPORTED_FLAGS:
                raise self.fail(f"the inline flag {char!r} is not supported (only i and s are)")
            elif turned_on:
                current.add(char)
            else:
                current.discard(char)
        return "".join(sorted(current))

    def escape(self, flags: str) -> tuple[str, bool]:
        """The Python text for the escape after a backslash, and whether it can be quantified."""
        char = self.take()
        if char == "Q":
            # Java quotes character by character: a quantifier after \E takes the last one.
            text = "".join(_case(re.escape(quoted), flags) for quoted in self.quoted())
            return text, bool(text)
        if char in _CLASS_SHORTHANDS:
            return "\\" + char, True
        if char in "bB":
            if self.at("{"):
                raise self.fail("boundary matchers such as \\b{g} are not supported")
            return "\\" + char, False
        if char == "A":
            return r"\A", False
        if char == "z":
            return r"\Z", False
        if char == "Z":
            return _DOLLAR, False
        if char in "123456789":
            return _case(self.numbered_reference(int(char)), flags), True
        if char == "k":
            if self.take() != "<":
                raise self.fail("\\k is not followed by '<' and a group name")
            name = self.group_name()
            if name not in self.group_names:
                raise self.fail(f"named capturing group <{name}> does not exist")
            if name not in self.closed_names:
                raise self.fail(f"Python cannot refer to the group <{name}> from inside it")
            return _case(f"(?P={name})", flags), True
        return _case(re.escape(self.literal_escape(char)), flags), True

    def numbered_reference(self, number: int) -> str:
        # Java reads further digits while they still name a group defined before this point.
        while self.at(_DIGITS) and number * 10 + int(self.src[self.pos]) <= self.groups_opened:
            number = number * 10 + int(self.take())
        if number > self.groups_opened:
            raise self.fail(f"the back reference \\{number} names no group defined before it")
        if number in self.open_groups:
            raise self.fail(f"Python cannot refer to the group \\{number} from inside it")
        if number >= 100:
            raise self.fail("Python cannot refer to groups numbered 100 and above")
        return f"(?:\\{number})"

    def quoted(self) -> str:
        end = self.src.find("\\E", self.pos)
        end = len(self.src) if end < 0 else end
        text = self.src[self.pos:end]
        self.pos = min(end + 2, len(self.src))
        return text

    def literal_escape(self, char: str) -> str:
        """The character a literal escape stands for; Java's other letter escapes are refused."""
        simple = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\a", "e": "\x1b"}
        if char in simple:
            return simple[char]
        if char == "0":
            return chr(self.octal())
        if char == "x":
            return chr(self.hexadecimal())
        if char == "u":
            return self.unicode_escape()
        if char == "c":
            return chr(ord(self.take()) ^ 64)
        if char in "pP":
            raise self.fail("Unicode properties such as \\p{L} are not supported")
        if char in _ASCII_LETTERS or char in _DIGITS:
            raise self.fail(f"the escape \\{char} is not supported")
        return char

    def octal(self) -> int:
        if not self.at(_OCTAL):
            raise self.fail("Illegal octal escape sequence")
        first = self.take()
        value = int(first)
        if self.at(_OCTAL):
            value = value * 8 + int(self.take())
            if first <= "3" and self.at(_OCTAL):
                value = value * 8 + int(self.take())
        return value

    def hexadecimal(self) -> int:
        if self.at("{"):
            self.take()
            digits = self.take_while(_HEX)
            if not digits or not self.at("}"):
                raise self.fail("Unclosed hexadecimal escape sequence")
            self.take()
            if int(digits, 16) > 0x10FFFF:
                raise self.fail("Hexadecimal codepoint is too big")
            return int(digits, 16)
        return self.hex_digits(2, "Illegal hexadecimal escape sequence")

    def hex_digits(self, count: int, message: str) -> int:
        digits = self.src[self.pos:self.pos + count]
        if len(digits) != count or any(d not in _HEX for d in digits):
            raise self.fail(message)
        self.pos += count
        return int(digits, 16)

    def unicode_escape(self) -> str:
        unit = self.hex_digits(4, "Illegal Unicode escape sequence")
        # Java joins an escaped surrogate pair into one code point.
        if 0xD800 <= unit <= 0xDBFF and self.src.startswith("\\u", self.pos):
            saved = self.pos
            self.pos += 2
            low = self.hex_digits(4, "Illegal Unicode escape sequence")
            if 0xDC00 <= low <= 0xDFFF:
                return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
            self.pos = saved
        return chr(unit)

    def character_class(self) -> str:
        negated = self.at("^")
        if negated:
            self.take()
        items: list[tuple[str, str]] = []  # ("char", c), ("set", r"\d") or ("dash", "-")
        while True:
            if self.pos >= len(self.src):
                raise self.fail("Unclosed character class")
            char = self.take()
            if char == "]" and items:  # a "]" first in the class is a literal, as in Java
                break
            if char == "[":
                raise self.fail("character class union ([a[b]]) is not supported")
            if char == "&" and self.at("&"):
                raise self.fail("character class intersection (&&) is not supported")
            if char == "-" and items:
                items.append(("dash", char))
            elif char == "\\":
                escaped = self.take()
                if escaped == "Q":
                    items.extend(("char", quoted) for quoted in self.quoted())
                elif escaped in _CLASS_SHORTHANDS:
                    items.append(("set", "\\" + escaped))
                else:
                    items.append(("char", self.literal_escape(escaped)))
            else:
                items.append(("char", char))
        return "[" + ("^" if negated else "") + self.class_body(items) + "]"

    def class_body(self, items: list[tuple[str, str]]) -> str:
        parts: list[str] = []
        index = 0
        while index < len(items):
            kind, value = items[index]
            if kind == "dash":
                if index != len(items) - 1:
                    raise self.fail("a '-' in a character class must start or end it, or make a range")
                parts.append(r"\-")
            elif index + 2 < len(items) and items[index + 1][0] == "dash":
                end_kind, end = items[index + 2]
                if kind != "char" or end_kind != "char" or ord(end) < ord(value):
                    raise self.fail(f"Illegal character range near {value!r}")
                parts.append(f"{re.escape(value)}-{re.escape(end)}")
                index += 2
            else:
                parts.append(value if kind == "set" else re.escape(value))
            index += 1
        return "".join(parts)


def _case(text: str, flags: str) -> str:
    # Java's (?i) lasts until its group ends, across "|"; scoping each atom keeps that meaning.
    return f"(?i:{text})" if "i" in flags and text else text


def compile_java_regex(pattern: str) -> re.Pattern:
    """A Python pattern that matches what the Java pattern matches, with the same groups.

    ValueError for a pattern Java refuses or whose meaning Python's ``re`` cannot reproduce.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"a regular expression must be a str, not {pattern!r}")
    try:
        python = _JavaRegexTranslator(pattern).translate()
        return re.compile(python, re.ASCII)
    except _JavaRegexError as error:
        raise ValueError(f"the regular expression {pattern!r} is not supported: {error}") from None
    except re.error as error:
        raise ValueError(f"the regular expression {pattern!r} cannot run in Python: {error}") from None


def java_trim(text: str) -> str:
    """Java's ``String.trim()``: strips every character up to U+0020, and nothing else."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def java_find_all(regex: re.Pattern, text: str) -> Iterator[re.Match]:
    """Successive ``Matcher.find()`` results: after an empty match Java searches again one
    character further on, so an empty match never repeats at the same place."""
    first, last = -1, 0
    while True:
        start = last + 1 if last == first else last
        if start > len(text):
            return
        match = regex.search(text, start)
        if match is None:
            return
        yield match
        first, last = match.span()


@frozen
class JavaReplacement:
    """A Java replacement string (``Matcher.replaceAll``): ``$n`` and ``${name}`` insert groups,
    a backslash makes the next character literal. Checked against the pattern at construction,
    where Java would fail only when a match is replaced."""

    regex: re.Pattern = field(validator=validators.instance_of(re.Pattern))
    text: str = field(validator=validators.instance_of(str))
    _parts: tuple[str | int, ...] = field(init=False, repr=False, eq=False)

    @_parts.default
    def _parse(self) -> tuple[str | int, ...]:
        parts: list[str | int] = []
        literal: list[str] = []
        text, index, groups = self.text, 0, self.regex.groups

        def flush():
            if literal:
                parts.append("".join(literal))
                literal.clear()

        while index < len(text):
            char = text[index]
            index += 1
            if char == "\\":
                if index == len(text):
                    raise ValueError(f"the replacement {text!r} ends with a lone backslash")
                literal.append(text[index])
                index += 1
            elif char != "$":
                literal.append(char)
            elif index == len(text):
                raise ValueError(f"the replacement {text!r} ends with '$': the group index is missing")
            elif text[index] == "{":
                end = index + 1
                while end < len(text) and text[end] in _ASCII_LETTERS + _DIGITS:
                    end += 1
                name = text[index + 1:end]
                if not name or end == len(text) or text[end] != "}":
                    raise ValueError(f"the replacement {text!r} has a malformed ${{name}} reference")
                if name not in self.regex.groupindex:
                    raise ValueError(f"the replacement {text!r} names the group {{{name}}}, which the pattern lacks")
                flush()
                parts.append(self.regex.groupindex[name])
                index = end + 1
            elif text[index] in _DIGITS:
                number = int(text[index])
                index += 1
                # Java takes further digits while they still name an existing group.
                while index < len(text) and text[index] in _DIGITS and number * 10 + int(text[index]) <= groups:
                    number = number * 10 + int(text[index])
                    index += 1
                if number > groups:
                    raise ValueError(
                        f"the replacement {text!r} refers to group {number}; the pattern has {groups}"
                    )
                flush()
                parts.append(number)
            else:
                raise ValueError(f"the replacement {text!r} has an illegal group reference after '$'")
        flush()
        return tuple(parts)

    def expand(self, match: re.Match) -> str:
        # A group that did not take part in the match inserts nothing, as in Java.
        return "".join(part if isinstance(part, str) else (match.group(part) or "") for part in self._parts)

    def replace(self, text: str, count: int = 0) -> str:
        """``replaceAll`` (count 0) or ``replaceFirst`` (count 1) on ``text``."""
        return self.regex.sub(self.expand, text, count=count)


# ---------------------------------------------------------------------------- subject DN

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


# ---------------------------------------------------------------------------- rules

# Kafka's own rule grammar, read by the translator so that it splits and parses exactly as Java.
_RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = compile_java_regex(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER = compile_java_regex(_RULE_PATTERN)
_BACK_REFERENCE = re.compile(r"\$([0-9]+)")


def escape_literal_back_references(replacement: str, group_count: int) -> str:
    """Kafka's escapeLiteralBackReferences: ``$n`` naming no group becomes a literal ``$n``.

    ``$123`` with 12 groups is kept (Java reads it as group 12 and a "3"). Reproduced with
    Kafka's own quirk: it scans the original text but inserts into the text already changed,
    so from the second escape on, each backslash lands one character earlier per escape made.
    """
    if group_count == 0:
        return replacement
    value = replacement
    for match in _BACK_REFERENCE.finditer(replacement):
        digits = match.group(1)
        if digits.startswith("0"):
            continue
        if len(digits) > 10 or int(digits) > _INT_MAX:
            raise ValueError(f"the back reference ${digits} is too large for Kafka to read")
        index = int(digits)
        while index > group_count and index >= 10:
            index //= 10
        if index > group_count:
            start = match.start(1) - 1
            value = value[:start] + "\\" + value[start:]
    return value


def _case_flag(instance, attribute, value):
    if value not in ("", "L", "U"):
        raise ValueError(f"case must be '', 'L' (lower) or 'U' (upper), not {value!r}")


@frozen
class SslPrincipalMappingRule:
    """``DEFAULT`` (no pattern) or ``RULE:pattern/replacement/`` with case ``L`` or ``U``."""

    pattern: str | None = field(default=None, validator=validators.optional(validators.instance_of(str)))
    replacement: str | None = field(default=None, validator=validators.optional(validators.instance_of(str)))
    case: str = field(default="", validator=_case_flag)
    _substitution: JavaReplacement | None = field(init=False, repr=False, eq=False)

    @_substitution.default
    def _compile(self) -> JavaReplacement | None:
        if (self.pattern is None) != (self.replacement is None):
            raise ValueError("a rule has both a pattern and a replacement, or neither (DEFAULT)")
        if self.pattern is None:
            if self.case:
                raise ValueError("the DEFAULT rule takes no case flag")
            return None
        regex = compile_java_regex(self.pattern)
        return JavaReplacement(regex, escape_literal_back_references(self.replacement, regex.groups))

    @property
    def is_default(self) -> bool:
        return self.pattern is None

    def apply(self, distinguished_name: str) -> str | None:
        """The short name, or None when the rule does not match the whole DN."""
        if self._substitution is None:
            return distinguished_name
        if self._substitution.regex.fullmatch(distinguished_name) is None:
            return None
        result = self._substitution.replace(distinguished_name)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.pattern is None:
            return DEFAULT_RULE
        case = f"/{self.case}" if self.case else ""
        return f"RULE:{self.pattern}/{self.replacement}{case}"


def split_rules(rules: str) -> list[str]:
    """The rule texts of ``ssl.principal.mapping.rules``, split as Kafka splits them (empty
    ones included; they are ignored when parsed)."""
    return [match.group(1) for match in java_find_all(_RULE_SPLITTER, java_trim(rules))]


def parse_rule(text: str) -> SslPrincipalMappingRule | None:
    """One rule; None for an empty one. ValueError quoting the rule when it is malformed."""
    match = _RULE_PARSER.match(text)
    if match.end() != len(text):
        raise ValueError(f"invalid rule {text!r}: unmatched substring {text[match.end():]!r}")
    if match.group(1) is not None:
        return SslPrincipalMappingRule()
    if match.group(2) is None:
        return None
    try:
        return SslPrincipalMappingRule(match.group(2), match.group(4), match.group(6))
    except ValueError as error:
        raise ValueError(f"invalid rule {text!r}: {error}") from None


@frozen
class SslPrincipalMapper:
    """Kafka's SslPrincipalMapper: the first rule that maps the DN gives the short name."""

    rules: tuple[SslPrincipalMappingRule, ...] = field(
        converter=tuple,
        validator=validators.deep_iterable(validators.instance_of(SslPrincipalMappingRule)),
    )

    @classmethod
    def parse(cls, rules: str | None = DEFAULT_RULE) -> SslPrincipalMapper:
        """From the text of ``ssl.principal.mapping.rules`` (None: ``DEFAULT``)."""
        if rules is None:
            rules = DEFAULT_RULE
        if not isinstance(rules, str):
            raise TypeError(f"the mapping rules must be a str, not {rules!r}")
        parsed = (parse_rule(text) for text in split_rules(rules))
        return cls(tuple(rule for rule in parsed if rule is not None))

    def get_name(self, distinguished_name: str) -> str:
        """The short name for a DN in ``X500Principal.getName()`` form; NoMatchingRule if no
        rule maps it."""
        for rule in self.rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {distinguished_name}, rules {self._rule_list()}")

    def _rule_list(self) -> str:
        return "[" + ", ".join(str(rule) for rule in self.rules) + "]"

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = {self._rule_list()})"


__all__ = [
    "DEFAULT_RULE",
    "JavaReplacement",
    "NoMatchingRule",
    "SslPrincipalMapper",
    "SslPrincipalMappingRule",
    "compile_java_regex",
    "escape_literal_back_references",
    "java_find_all",
    "java_trim",
    "parse_rule",
    "split_rules",
    "x500_principal_name",
]
