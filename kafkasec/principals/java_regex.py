"""Java regular expressions and replacement strings, read with Java's meaning in Python.

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

_OCTAL = "01234567"
_HEX = string.hexdigits
_ASCII_LETTERS = string.ascii_letters
_DIGITS = string.digits
JAVA_INT_MAX = 2**31 - 1  # Java's Integer.parseInt limit, where Kafka reads numbers from rules

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


__all__ = ["JAVA_INT_MAX", "JavaReplacement", "compile_java_regex", "java_find_all"]
