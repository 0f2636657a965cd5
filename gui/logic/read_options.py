"""The reading options of a CSV file the app offers: which read_csv parameters, and the
choices of each ("detected" is None, which lets rwtool sniff the file).

The widget that shows them is gui.widgets.read_options; this module must not import Qt.
"""

from __future__ import annotations

__all__ = ["KEYS", "HEADER", "DELIMITERS", "DECIMALS", "ENCODINGS"]

#: the read_csv parameters these options set (gui.logic.export writes them into the snippet
#: in this order)
KEYS = ("encoding", "delimiter", "decimal", "header", "names")

#: the choices of each option, (text shown, value); None lets rwtool detect it
HEADER = (("detected", None), ("the first line names the columns", True),
          ("no header line: every line is data", False))
DELIMITERS = (("detected", None), ("comma  ,", ","), ("semicolon  ;", ";"), ("tab", "\t"),
              ("pipe  |", "|"), ("space", " "))
DECIMALS = (("detected", None), ("point  1.5", "."), ("comma  1,5", ","))
ENCODINGS = (("detected", None), ("utf-8", "utf-8"), ("latin-1 (ISO-8859-1)", "latin-1"),
             ("Windows-1252 (Western Europe)", "cp1252"), ("Shift-JIS (Japanese)", "cp932"),
             ("GB18030 (Chinese)", "gb18030"), ("EUC-KR (Korean)", "cp949"),
             ("Windows-1251 (Cyrillic)", "cp1251"), ("utf-16", "utf-16"), ("utf-32", "utf-32"))
