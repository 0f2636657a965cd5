"""Numbers written for people: "$3", "3,50 €", "EUR 1.200,50", "3 %", "1 000", "1,234.5",
"1,23,456.7" (Indian grouping), "0,5" in a comma file.

A column of such cells is numbers, not categories. :func:`detect_format` finds the one style a
column's cells share (a currency symbol or ISO code before or after the number, a percent
sign, a thousands separator, a decimal comma), deciding a dot or comma between digit groups
from the column's other cells, or says why there is none; :func:`parse_formatted` reads cells
in a recorded style (the value as written: "3%" is 3, "$1,200" is 1200). The style is stored in
the preprocessing record so a new file is read the same way. Ambiguous cells ("1,234" alone in
a decimal-point file: a thousands comma or a decimal comma?) get no style. This module must not
decide column kinds. It works on a column's distinct texts (at most the reader's vocabulary
size), never cell by cell.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["detect_format", "parse_formatted", "describe_format", "check_format"]

#: currency signs and the ISO 4217 codes of the currencies offices write most
_SYMBOLS = ("$", "€", "£", "¥", "₹")
_CODES = ("EUR", "USD", "GBP", "JPY", "CHF", "CNY", "INR", "CAD", "AUD", "NZD", "SEK", "NOK",
          "DKK", "PLN", "CZK", "HUF", "RUB", "BRL", "MXN", "ZAR", "KRW", "HKD", "SGD", "TRY")
_CURRENCIES = _SYMBOLS + _CODES
_SPACES = " \u00a0\u202f'\u2019"
_CUR = "|".join(re.escape(c) for c in _CURRENCIES)
_CELL = re.compile(rf"^(?P<s1>[+-]?)\s*(?P<c1>{_CUR})?\s*(?P<s2>[+-]?)"
                   r"(?P<num>[0-9](?:[0-9 \u00a0\u202f'\u2019,.]*[0-9])?)"
                   rf"\s*(?P<c2>{_CUR})?\s*(?P<p>%?)$")
_STYLES = [   # (pattern of the digits, what it says), the first match wins
    (re.compile(r"^[0-9]{1,3}(\.[0-9]{3})+$"), {"dot?"}),
    (re.compile(r"^[0-9]+(\.[0-9]+)?$"), set()),
    (re.compile(r"^[0-9]{1,3}(,[0-9]{3})+$"), {"comma?"}),
    (re.compile(r"^[0-9]+,[0-9]+$"), {"decimal,"}),
    (re.compile(r"^[0-9]{1,3}(,[0-9]{3})+\.[0-9]+$"), {"thousands,"}),
    # Indian grouping: the last three digits, then pairs ("1,23,456.7")
    (re.compile(r"^[0-9]{1,2}(,[0-9]{2})+,[0-9]{3}(\.[0-9]+)?$"), {"thousands,"}),
    (re.compile(r"^[0-9]{1,3}([ \u00a0\u202f'\u2019][0-9]{3})+(\.[0-9]+)?$"), {"thousands "}),
    (re.compile(r"^[0-9]{1,3}([ \u00a0\u202f'\u2019][0-9]{3})+,[0-9]+$"),
     {"thousands ", "decimal,"}),
    (re.compile(r"^[0-9]{1,3}(\.[0-9]{3})+,[0-9]+$"), {"thousands.", "decimal,"}),
]


def _cell_style(cell: str):
    m = _CELL.match(cell.strip())
    if not m or (m["s1"] and m["s2"]) or (m["c1"] and m["c2"]):
        return None
    for pat, tags in _STYLES:
        if pat.match(m["num"]):
            out = set(tags)
            if "." in m["num"] and not tags:
                out.add("decimal.")
            cur = m["c1"] or m["c2"]
            if cur:
                out.add("cur" + cur)
            if m["p"]:
                out.add("%")
            return out
    return None


def detect_format(texts, decimal: str = ".", declared: bool = False, shown=frozenset()):
    """(format, None) when every cell of ``texts`` is a number in one shared style, else
    (None, reason). The format is a dict: currency (a symbol, an ISO code or None), percent
    (bool), thousands (" ", ",", "." or None), decimal ("." or ",").

    The style is decided from all the column's cells: ``shown`` holds the decimal marks its
    plain number cells show ("," for "0,5", "." for "0.25"), so "1.234" beside "0,5" is 1234
    and "1,234" beside "0.25" is 1234. A lone "1,234" or "1.234" follows the file's decimal
    mark ``decimal`` ("1,234" in a decimal-point file is ambiguous unless ``declared``: the
    user said the column is numeric).
    """
    tags: set[str] = set()
    for t in texts:
        st = _cell_style(t)
        if st is None:
            return None, f"{t!r} is not a number"
        tags |= st
    if not tags:
        return None, "no formatted cell"
    comma_dec = bool({"decimal,", "thousands."} & tags) or "," in shown
    dot_dec = bool({"decimal.", "thousands,"} & tags) or "." in shown
    if comma_dec and dot_dec:
        return None, ("the cells mix a decimal comma and a decimal point, so no reading of "
                      "their commas and dots holds for the whole column")
    if "dot?" in tags:            # "1.234": thousands dot or decimal point?
        thousands_dot = comma_dec or (not dot_dec and decimal == ",")
        tags = (tags - {"dot?"}) | ({"thousands.", "decimal,"} if thousands_dot else set())
    if "comma?" in tags:          # "1,234": the other cells must say which comma it is
        if comma_dec or (not dot_dec and decimal == ","):
            tags = (tags - {"comma?"}) | {"decimal,"}
        elif dot_dec or declared:
            tags = (tags - {"comma?"}) | {"thousands,"}
        else:
            return None, ("a comma between digit groups ('1,234') may be a thousands "
                          "separator or a decimal comma")
    thousands = [k for k in ("thousands ", "thousands,", "thousands.") if k in tags]
    currencies = [k for k in tags if k.startswith("cur")]
    if len(thousands) > 1 or len(currencies) > 1 or ("thousands," in tags
                                                     and "decimal," in tags):
        return None, "the cells mix several ways of writing numbers"
    return {"currency": currencies[0][3:] if currencies else None, "percent": "%" in tags,
            "thousands": thousands[0][-1] if thousands else None,
            "decimal": "," if "decimal," in tags else "."}, None


def parse_formatted(texts, fmt: dict) -> np.ndarray:
    """The numbers of ``texts`` read in style ``fmt`` (NaN for a cell that is not)."""
    out = np.full(len(texts), np.nan)
    for i, t in enumerate(texts):
        st = _cell_style(t)
        if st is None:
            continue
        if any(k.startswith("cur") and k[3:] != fmt["currency"] for k in st):
            continue
        if "%" in st and not fmt["percent"]:
            continue
        m = _CELL.match(t.strip())
        num = m["num"]
        if fmt["thousands"] == " ":
            num = re.sub(f"[{_SPACES}]", "", num)
        elif fmt["thousands"] in (",", "."):
            num = num.replace(fmt["thousands"], "")
        if re.search(f"[{_SPACES}]", num):
            continue
        if fmt["decimal"] == ",":
            if "." in num:
                continue
            num = num.replace(",", ".")
        elif "," in num:
            continue
        sign = -1.0 if "-" in (m["s1"] + m["s2"]) else 1.0
        out[i] = sign * float(num)
    return out


def describe_format(fmt: dict) -> str:
    parts = []
    if not (fmt.get("currency") or fmt.get("percent") or fmt.get("thousands")
            or fmt.get("decimal") == ","):
        return "a decimal point"
    if fmt.get("currency"):
        parts.append(f"currency sign {fmt['currency']!r} dropped")
    if fmt.get("percent"):
        parts.append("percent sign dropped (3% reads as 3)")
    if fmt.get("thousands"):
        parts.append(f"thousands separator {fmt['thousands']!r}")
    if fmt.get("decimal") == ",":
        parts.append("decimal comma")
    return ", ".join(parts)


def check_format(fmt) -> bool:
    """Whether ``fmt`` is a valid recorded style (it may come from a model file)."""
    return (isinstance(fmt, dict) and set(fmt) == {"currency", "percent", "thousands", "decimal"}
            and fmt["currency"] in (None, *_CURRENCIES) and isinstance(fmt["percent"], bool)
            and fmt["thousands"] in (None, " ", ",", ".") and fmt["decimal"] in (".", ","))
