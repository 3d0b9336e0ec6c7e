"""Incomplete-prefix classifier for JSON text (the torn-row rules,
docs/reference/ledger.md#torn-rows).

Why a hand-written tokenizer instead of ``json.loads``: a crash can leave the last JSONL row cut
at any byte. The store must tell a *torn* row (a prefix of a valid row: appending bytes could
complete it, so it was never committed and is safely dropped) from a *corrupt* one (no suffix
can ever make it valid: something other than a torn append wrote it, so reading must fail
closed). ``json.loads`` only says "not valid"; it cannot say "valid so far". This scanner
walks the text once and reports where it stopped:

* ``"complete"`` - exactly one JSON value, optionally surrounded by JSON whitespace;
* ``"incomplete-prefix"`` - the input ran out while the text was still a prefix of some valid
  value (inside a string, escape, ``\\u`` escape, literal or number, after ``{``, ``[``, ``,`` or
  ``:``, or before any value at all - the empty text is a prefix of every value);
* ``"invalid"`` - no continuation can make it valid (impossible character, trailing comma,
  raw control character in a string, bad escape, leading zero, nesting deeper than
  :data:`MAX_DEPTH`, anything after a complete top-level value).

A number at the very end of the text counts as ``"complete"`` at top level (``12`` is a whole
document) even though more digits could follow; inside a container the container is still
open, so the text is an incomplete prefix.
"""

from __future__ import annotations

from typing import Final, Literal

JsonTextClass = Literal["complete", "incomplete-prefix", "invalid"]

#: Deepest container nesting accepted (matches the reference classifier).
MAX_DEPTH: Final = 512

_WHITESPACE: Final = frozenset(" \t\n\r")
_DIGITS: Final = frozenset("0123456789")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES: Final = frozenset('"\\/bfnrt')
_LITERALS: Final = {"t": "true", "f": "false", "n": "null"}

# Scanner outcomes for one scalar: a new position, or "ran out" / "impossible".
_EOF: Final = -1
_BAD: Final = -2


def _scan_string(text: str, pos: int) -> int:
    """Scan a string whose opening quote is at ``pos``; return the index after the closing
    quote, or ``_EOF`` / ``_BAD``."""
    end = len(text)
    i = pos + 1
    while i < end:
        char = text[i]
        if char == '"':
            return i + 1
        if char < " ":
            return _BAD  # raw control characters must be escaped
        if char == "\\":
            i += 1
            if i == end:
                return _EOF
            escape = text[i]
            if escape == "u":
                for _ in range(4):
                    i += 1
                    if i == end:
                        return _EOF
                    if text[i] not in _HEX:
                        return _BAD
            elif escape not in _SIMPLE_ESCAPES:
                return _BAD
        i += 1
    return _EOF


def _scan_digits(text: str, i: int) -> int:
    while i < len(text) and text[i] in _DIGITS:
        i += 1
    return i


def _scan_number(text: str, pos: int) -> tuple[int, bool]:
    """Scan a number starting at ``pos`` (a ``-`` or a digit).

    Returns ``(next_index, finished)``: ``finished`` is False when the text ends where more
    characters are *required* (``-``, ``1.``, ``1e``, ``1e+``); ``next_index`` is ``_BAD``
    when a required digit is replaced by something else. A number that ends at the end of the
    text but could be extended (``12``) is finished: whoever called decides what EOF means.
    """
    end = len(text)
    i = pos
    if text[i] == "-":
        i += 1
        if i == end:
            return i, False
    if text[i] == "0":
        i += 1
        if i < end and text[i] in _DIGITS:
            return _BAD, False  # leading zero
    elif text[i] in _DIGITS:
        i = _scan_digits(text, i)
    else:
        return _BAD, False
    if i < end and text[i] == ".":
        i += 1
        if i == end:
            return i, False
        if text[i] not in _DIGITS:
            return _BAD, False
        i = _scan_digits(text, i)
    if i < end and text[i] in "eE":
        i += 1
        if i < end and text[i] in "+-":
            i += 1
        if i == end:
            return i, False
        if text[i] not in _DIGITS:
            return _BAD, False
        i = _scan_digits(text, i)
    return i, True


def _scan_literal(text: str, pos: int) -> int:
    """Scan ``true`` / ``false`` / ``null`` starting at ``pos``."""
    word = _LITERALS[text[pos]]
    available = text[pos : pos + len(word)]
    if not word.startswith(available):
        return _BAD
    if len(available) < len(word):
        return _EOF
    return pos + len(word)


def classify_json_text(text: str) -> JsonTextClass:
    """Classify ``text`` as one complete JSON value, an incomplete prefix of one, or invalid.

    See the module docstring for the exact contract. The scan is iterative (an explicit stack
    of open containers), so deep nesting cannot exhaust the Python stack.
    """
    return _Scanner(text).run()


class _Scanner:
    """One pass over ``text``: the position, the open containers and what may come next.

    ``expect`` is what the grammar allows at the next non-whitespace character:

    * ``"value"``      a value (start of text, after ``:`` or after ``,`` in an array)
    * ``"value_or_]"`` a value or ``]`` (right after ``[``)
    * ``"key_or_}"``   a key string or ``}`` (right after ``{``)
    * ``"key"``        a key string (after ``,`` in an object: ``}`` here is a trailing comma)
    * ``"colon"``      ``:`` after a key
    * ``"after"``      ``,`` or the closer of the innermost container, or only whitespace at top

    Each step consumes one token and returns ``None`` to go on, or the final verdict.
    """

    __slots__ = ("end", "expect", "i", "stack", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.end = len(text)
        self.stack: list[str] = []  # open containers: "{" or "["
        self.expect = "value"
        self.i = 0

    def run(self) -> JsonTextClass:
        text, end = self.text, self.end
        while True:
            i = self.i
            while i < end and text[i] in _WHITESPACE:
                i += 1
            self.i = i
            if i == end:
                if self.expect == "after" and not self.stack:
                    return "complete"
                return "incomplete-prefix"
            char = text[i]
            if self.expect == "after":
                verdict = self._after_value(char)
            elif self.expect == "colon":
                verdict = self._colon(char)
            elif self.expect in ("key", "key_or_}"):
                verdict = self._key(char)
            else:
                verdict = self._value(char)
            if verdict is not None:
                return verdict

    def _after_value(self, char: str) -> JsonTextClass | None:
        stack = self.stack
        if not stack:
            return "invalid"  # trailing garbage after a complete value
        closer = "}" if stack[-1] == "{" else "]"
        if char == closer:
            stack.pop()
        elif char == ",":
            self.expect = "key" if stack[-1] == "{" else "value"
        else:
            return "invalid"
        self.i += 1
        return None

    def _colon(self, char: str) -> JsonTextClass | None:
        if char != ":":
            return "invalid"
        self.expect = "value"
        self.i += 1
        return None

    def _key(self, char: str) -> JsonTextClass | None:
        if char == "}" and self.expect == "key_or_}":
            self.stack.pop()
            self.expect = "after"
            self.i += 1
            return None
        if char != '"':
            return "invalid"  # includes "}" after "," (trailing comma)
        return self._scalar_end(_scan_string(self.text, self.i), then="colon")

    def _value(self, char: str) -> JsonTextClass | None:
        if char == "]" and self.expect == "value_or_]":
            self.stack.pop()
            self.expect = "after"
            self.i += 1
            return None
        if char in "{[":
            if len(self.stack) >= MAX_DEPTH:
                return "invalid"
            self.stack.append(char)
            self.expect = "key_or_}" if char == "{" else "value_or_]"
            self.i += 1
            return None
        if char == '"':
            nxt = _scan_string(self.text, self.i)
        elif char in _LITERALS:
            nxt = _scan_literal(self.text, self.i)
        elif char == "-" or char in _DIGITS:
            nxt, finished = _scan_number(self.text, self.i)
            if nxt != _BAD and not finished:
                return "incomplete-prefix"
        else:
            return "invalid"  # includes "]" / "}" / "," where a value is required
        return self._scalar_end(nxt, then="after")

    def _scalar_end(self, nxt: int, *, then: str) -> JsonTextClass | None:
        """Move past a scanned string, literal or number, or report why the scan stopped."""
        if nxt == _BAD:
            return "invalid"
        if nxt == _EOF:
            return "incomplete-prefix"
        self.expect = then
        self.i = nxt
        return None
