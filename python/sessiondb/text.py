"""The reference's pure helpers, ported from the TypeScript engine (src/sqlite/titles.ts and
src/sqlite/search.ts) so both languages give the same results (a test compares them)."""
from __future__ import annotations

import re
from typing import List, Optional

from .errors import TitleTooLongError
from .protocol_description import LIMITS

MAX_TITLE_LENGTH: int = LIMITS["titleMaxLength"]

# JavaScript's \s (which the TypeScript side uses) plus NEL (U+0085). Python's own \s also
# matches U+001C-001F, so the class is spelled out.
_JS_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# The same characters, spelled out for str.strip() (computing them by matching every BMP
# character against the class took 0.1 s of every import).
_JS_SPACE_CHARS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_INVISIBLE = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffc]")
_SPACE_RUN = re.compile("[" + _JS_SPACE + "]+")


def sanitize_title(title: Optional[str]) -> Optional[str]:
    """Cleans a title: strips control, zero-width and direction-override characters, collapses
    whitespace, trims. None or empty gives None; over 100 characters raises TitleTooLongError
    (a ValueError, as the reference raises)."""
    if not title:
        return None
    cleaned = _SPACE_RUN.sub(" ", _INVISIBLE.sub("", _CONTROL.sub("", title))).strip(_JS_SPACE_CHARS)
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise TitleTooLongError(
            "TITLE_TOO_LONG", f"Title too long ({len(cleaned)} chars, max {MAX_TITLE_LENGTH})"
        )
    return cleaned


# A word character: Unicode letters, digits and "_" (Python's \w).
_WORD = r"\w"
_PHRASE_OPEN = "\ue000"
_PHRASE_CLOSE = "\ue001"
_PLACEHOLDER_CHARS = re.compile("[\ue000\ue001]")
_PHRASE = re.compile(r'"[^"]*"')
_OPERATOR_CHARS = re.compile(r'[+{}()"^]')
_STARS = re.compile(r"\*+")
_LEADING_STAR = re.compile("(^|[" + _JS_SPACE + r"])\*")
_LEADING_OPERATOR = re.compile(r"^(AND|OR|NOT)(?!" + _WORD + ")[" + _JS_SPACE + "]*", re.IGNORECASE)
_TRAILING_OPERATOR = re.compile("[" + _JS_SPACE + "]+(AND|OR|NOT)[" + _JS_SPACE + r"]*\Z", re.IGNORECASE)
_COMPOUND = re.compile(r"(?<!\w)(\w+(?:[.-]\w+)+)(?!\w)")
_RESTORE = re.compile(_PHRASE_OPEN + "([0-9]+)" + _PHRASE_CLOSE)


def sanitize_fts5_query(query: str) -> str:
    """Turns what a person typed into a valid FTS5 query (the six steps of SPEC 3.1)."""
    phrases: List[str] = []

    def protect(match: "re.Match[str]") -> str:
        phrases.append(match.group(0))
        return f"{_PHRASE_OPEN}{len(phrases) - 1}{_PHRASE_CLOSE}"

    s = _PLACEHOLDER_CHARS.sub("", query)
    s = _PHRASE.sub(protect, s)
    s = _OPERATOR_CHARS.sub(" ", s)
    s = _LEADING_STAR.sub(r"\1", _STARS.sub("*", s))
    s = _LEADING_OPERATOR.sub("", s.strip(_JS_SPACE_CHARS), count=1)
    s = _TRAILING_OPERATOR.sub("", s.strip(_JS_SPACE_CHARS), count=1)
    s = _COMPOUND.sub(r'"\1"', s)
    s = _RESTORE.sub(lambda m: phrases[int(m.group(1))] if int(m.group(1)) < len(phrases) else "", s)
    return s.strip(_JS_SPACE_CHARS)


_CJK_CLASS = (
    "[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\u3000-\u303f\u3040-\u309f\u30a0-\u30ff\uac00-\ud7af]"
)
# Compiled at first use: a class this wide takes re tens of milliseconds, which every import paid.
_cjk: "Optional[re.Pattern[str]]" = None


def contains_cjk(text: str) -> bool:
    """True when the text has a Chinese, Japanese or Korean character (the ranges of SPEC 3.1)."""
    global _cjk
    if _cjk is None:
        _cjk = re.compile(_CJK_CLASS)
    return _cjk.search(text) is not None
