"""Which text encoding a CSV file's bytes are in: the byte-order mark, UTF-8, or a scored guess.

A file says its encoding with a byte-order mark (UTF-8, UTF-16 or UTF-32); without one, bytes
that decode as UTF-8 are UTF-8. Anything else is one of a few legacy encodings that offices
write (:data:`LEGACY`: Windows-1252 for Western Europe, Shift-JIS, GB18030, EUC-KR,
Windows-1251), and several of them decode most byte strings without an error, so each decoding
that succeeds is scored by what it produces (:func:`score`): the share of its non-ASCII
characters that are plausible text of that encoding's script, counting only the common
characters (JIS level-1 kanji and kana for Shift-JIS, GB2312 level-1 hanzi for GB18030, the
2,350 KS X 1001 syllables for EUC-KR, Cyrillic words for Windows-1251, single accented letters
and the usual signs for Windows-1252). Control characters, private-use and unassigned code
points count against a decoding. The best score wins, ties going to the earlier entry of
:data:`LEGACY`; Latin-1 (which decodes any byte) is the last resort.

This module decides and names encodings; it must not read files whole or parse CSV.
"""

from __future__ import annotations

import codecs
import unicodedata

__all__ = ["LEGACY", "bom_encoding", "guess_legacy", "score", "encoding_name"]

#: the legacy encodings tried, in the order ties are broken (Korean before Chinese: Hangul
#: bytes are also common hanzi, while Chinese text uses lead bytes EUC-KR gives to hanja)
LEGACY = ("cp1252", "cp932", "cp949", "gb18030", "cp1251")

_NAMES = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8 (with BOM)", "utf-16": "UTF-16",
          "utf-32": "UTF-32", "cp1252": "Windows-1252", "latin-1": "Latin-1",
          "iso8859-1": "Latin-1", "cp932": "Shift-JIS (Windows cp932)",
          "shift_jis": "Shift-JIS", "cp949": "EUC-KR (Windows cp949)", "euc_kr": "EUC-KR",
          "gb18030": "GB18030", "gbk": "GBK", "cp1251": "Windows-1251"}

#: non-letters a Western text legitimately holds
_LATIN_SIGNS = set("€£¥°§«»‘’‚“”„–—…·×÷µ²³¹½¼¾¿¡©®™•†‰¢¤¦¨¯±´¸ºª")
_CJK_PUNCT = range(0x3000, 0x3040)          # ideographic space, brackets, 、。
_FULLWIDTH = range(0xFF01, 0xFF5F)          # full-width ASCII forms (not half-width kana)


def bom_encoding(raw: bytes) -> str | None:
    """The encoding a byte-order mark names, None without one (UTF-32 is tested first: its
    little-endian mark starts with UTF-16's)."""
    if raw.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def encoding_name(encoding: str) -> str:
    """How people call ``encoding`` ("Shift-JIS (Windows cp932)" for "cp932")."""
    try:
        key = codecs.lookup(encoding).name
    except LookupError:
        return encoding
    return _NAMES.get(key, _NAMES.get(encoding, encoding))


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    for s in ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "CYRILLIC", "LATIN", "GREEK"):
        if name.startswith(s):
            return s
    return "OTHER"


def _common(ch: str, encoding: str) -> bool:
    """Whether ``ch``, one character of a multi-byte decoding, is common text of its script."""
    o = ord(ch)
    if o in _CJK_PUNCT or o in _FULLWIDTH:
        return True
    if encoding == "cp932":
        if 0x3041 <= o <= 0x30FF:                     # full-width hiragana and katakana
            return True
        b = ch.encode("cp932", errors="ignore")
        return len(b) == 2 and 0x88 <= b[0] <= 0x9F and _script(ch) == "CJK"   # JIS level 1
    if encoding == "gb18030":
        b = ch.encode("gb2312", errors="ignore")
        return len(b) == 2 and 0xB0 <= b[0] <= 0xD7                           # GB2312 level 1
    if encoding == "cp949":
        return 0xAC00 <= o <= 0xD7A3 and len(ch.encode("euc_kr", errors="ignore")) == 2
    return False


def score(text: str, encoding: str) -> float:
    """The share of the non-ASCII characters of ``text`` (a decoding in ``encoding``) that are
    plausible for that encoding (1.0 when there are none)."""
    good = total = 0
    run: list[str] = []

    def close_run():
        nonlocal good
        if not run:
            return
        if encoding in ("cp932", "gb18030", "cp949"):
            good += sum(_common(c, encoding) for c in run)
        elif encoding == "cp1251":
            good += sum(_script(c) == "CYRILLIC" for c in run) if all(
                _script(c) == "CYRILLIC" or c in _LATIN_SIGNS for c in run) else 0
        else:       # Western text: an accented letter or a sign among ASCII letters
            if len(run) <= 2 and all(c.isalpha() and _script(c) == "LATIN"
                                     or c in _LATIN_SIGNS for c in run):
                good += len(run)
        run.clear()

    for ch in text:
        if ch < "\x80":
            close_run()
            continue
        total += 1
        if unicodedata.category(ch) in ("Cc", "Co", "Cn", "Cs") or ch == "\ufffd":
            close_run()
            continue
        run.append(ch)
    close_run()
    return 1.0 if total == 0 else good / total


def guess_legacy(sample: bytes, decodes=None) -> tuple[str, float, list[tuple[str, float]]]:
    """(encoding, its score, the score of every candidate that decodes ``sample``) for bytes
    that are not UTF-8.

    ``sample``: bytes of the file holding its non-ASCII text (cut at a line break);
    ``decodes(encoding)``: whether the whole file decodes so (None: the sample is the file),
    asked in the order of the scores, so a file is decoded whole once in the usual case. The
    best-scored candidate that decodes the file wins; Latin-1 when none does.
    """
    scored = []
    for enc in LEGACY:
        try:
            text = sample.decode(enc)
        except UnicodeDecodeError:
            continue
        scored.append((enc, score(text, enc)))
    for enc, s in sorted(scored, key=lambda es: -es[1]):     # stable: ties keep LEGACY's order
        if decodes is None or decodes(enc):
            return enc, s, scored
    return "latin-1", 0.0, scored
