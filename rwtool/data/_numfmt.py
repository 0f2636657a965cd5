"""Numbers written for people: "$3", "3 %", "1 000", "1,234.5", "0,5" in a comma file.

A column of such cells is numbers, not categories. :func:`detect_format` finds the one style a
column's text cells share (a currency symbol, a percent sign, a thousands separator, a decimal
comma) or says why there is none; :func:`parse_formatted` reads cells in a recorded style (the
value as written: "3%" is 3, "$1,200" is 1200). The style is stored in the preprocessing record
so a new file is read the same way. Ambiguous cells ("1,234" alone: a thousands comma or a
decimal comma?) get no style. This module must not decide column kinds.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["detect_format", "parse_formatted", "describe_format", "check_format"]

_CURRENCIES = "$€£¥"
_SPACES = " \u00a0\u202f'\u2019"
_CELL = re.compile(r"^(?P<s1>[+-]?)\s*(?P<c1>[$€£¥]?)\s*(?P<s2>[+-]?)"
                   r"(?P<num>[0-9][0-9 \u00a0\u202f'\u2019,.]*)\s*(?P<c2>[$€£¥]?)\s*(?P<p>%?)$")
_STYLES = [   # (pattern of the digits, what it says)
    (re.compile(r"^[0-9]+(\.[0-9]+)?$"), set()),
    (re.compile(r"^[0-9]{1,3}(,[0-9]{3})+$"), {"comma?"}),
    (re.compile(r"^[0-9]+,[0-9]+$"), {"decimal,"}),
    (re.compile(r"^[0-9]{1,3}(,[0-9]{3})+\.[0-9]+$"), {"thousands,"}),
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
            cur = m["c1"] or m["c2"]
            if cur:
                out.add("cur" + cur)
            if m["p"]:
                out.add("%")
            return out
    return None


def detect_format(texts, decimal: str = ".", declared: bool = False):
    """(format, None) when every cell of ``texts`` is a number in one shared style, else
    (None, reason). The format is a dict: currency (a symbol or None), percent (bool),
    thousands (" ", ",", "." or None), decimal ("." or ","). ``declared``: the user said the
    column is numeric, so "1,234" alone follows the file's decimal mark ``decimal``."""
    tags: set[str] = set()
    for t in texts:
        st = _cell_style(t)
        if st is None:
            return None, f"{t!r} is not a number"
        tags |= st
    if not tags:
        return None, "no formatted cell"
    if "comma?" in tags:          # "1,234": the other cells must say which comma it is
        if "decimal," in tags or decimal == ",":
            tags = (tags - {"comma?"}) | {"decimal,"}
        elif "thousands," in tags or declared:
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
