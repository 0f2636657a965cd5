"""One line of status text whose changes repaint the line and lay nothing out again.

A QLabel whose text changes asks its parent's layout to be laid out again (QWidget.
updateGeometry) unless its size is fixed both ways, and a layout laid out again asks its own
parent, up to the window: the training panel's phase line, changed by the panel's clock every
250 ms during a run, laid out the splitter and the window each time (their size hints computed
again over the whole Data and Method forms). :class:`PhaseLine` has a constant size hint,
takes the width its layout gives it and draws its text elided to it.

This module draws; it must not know what the text says.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

__all__ = ["PhaseLine"]


class PhaseLine(QWidget):
    """A single line of plain text, elided at the right to the widget's width."""

    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self._text = text
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.setFixedHeight(self.fontMetrics().height() + 4)

    def sizeHint(self) -> QSize:
        return QSize(0, self.fontMetrics().height() + 4)

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        """Show ``text`` at the next paint (the line alone is repainted)."""
        if text != self._text:
            self._text = text
            # the full text where the line is too narrow for it
            self.setToolTip(text if self.fontMetrics().horizontalAdvance(text)
                            > self.width() - 4 else "")
            self.update()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.WindowText))
        rect = self.rect().adjusted(2, 0, -2, 0)
        painter.drawText(rect, Qt.AlignVCenter | Qt.AlignLeft,
                         self.fontMetrics().elidedText(self._text, Qt.ElideRight, rect.width()))
