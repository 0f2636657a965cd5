"""A plot's first paint prepared ahead of it, a step at a time, so that the paint only replays.

The first paint of a pyqtgraph plot does more than paint: the page takes its size (the
resize lays the plot out again), the view box fits its range to the data, each axis builds its
ticks, labels and grid lines into a QPicture (1-3 ms each), finds its labels wider than the
room it had, asks for a new layout, and so is laid out, built and painted again, two or three
times in the same turn. Under Xvfb a result tab's first paint was 15-40 ms of the GUI thread in
one turn and a repaint of the same tab 3-7 ms (bench_gui_load --load 4: the tab flips' gaps of
55-211 ms). :func:`prepare_page` does that work on a page that is not on screen, one axis or
one pass over the other items a step (gui.widgets.steps), until a layout pass changes nothing:
the page's size, its layouts, the view's range, every axis's picture, the curves' paths, the
text's layout, each built by painting the item onto a one-pixel image with the transform it
will be painted with. The paint that comes when the page is shown then finds them built.

This module prepares drawings; it must not change what a plot shows.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QRect, Qt
from PySide6.QtGui import QImage, QPainter, QResizeEvent
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

__all__ = ["prepare_page", "prepare_view", "settle_layouts", "unprepared_axes"]

#: layout passes per view: an axis whose labels grew asks for one more (two sufficed in
#: every plot of the app measured; the bound keeps a plot that never settles finite)
ROUNDS = 4


def prepare_page(page: QWidget, rect: QRect):
    """Prepare the first paint of ``page`` (a plot or a widget holding plots, not on screen)
    at the geometry ``rect`` it will be shown with, a step up to each ``yield``.

    A page on screen is left alone: its own paint builds what it needs."""
    if page.isVisible():
        return
    if page.geometry() != rect:
        page.setGeometry(rect)
    _lay_out(page)
    # (a page not on screen is hidden itself: only its plots hidden within it are skipped)
    views = [page] if isinstance(page, pg.GraphicsView) else \
        [v for v in page.findChildren(pg.GraphicsView) if not v.isHidden()]
    for view in views:
        yield
        yield from prepare_view(view)


def settle_layouts(rounds: int = ROUNDS) -> None:
    """Run now the layout requests waiting in the event queue, and those their layouts post
    in turn (a page just shown: its layouts and each parent's, up to the window's), so that
    the page's first paint comes once with every layout done. Left to the event loop, each
    request came in an iteration of its own with a paint of the window after it: the Results
    tab shown at the end of a run was painted three times in one turn (bench_gui_load
    --record-turns: 14-24 ms of the GUI thread; 12 -> 8 ms under Xvfb with the layouts
    settled first)."""
    for _ in range(rounds):
        QCoreApplication.sendPostedEvents(None, QEvent.LayoutRequest)


def unprepared_axes(view: pg.GraphicsView) -> list:
    """The axes of ``view`` shown without their picture built (their next paint builds it)."""
    return [it for it in view.scene().items()
            if isinstance(it, pg.AxisItem) and it.isVisible() and it.picture is None]


def prepare_view(view: pg.GraphicsView):
    """Lay out ``view`` at its size and build its items' drawing, a step up to each ``yield``
    (one axis, or the other items together: 0.3-1.5 ms)."""
    _lay_out(view)
    scratch = QImage(1, 1, QImage.Format_ARGB32_Premultiplied)
    for _ in range(ROUNDS):
        # the layout requests the last step left (an axis grown to fit its labels), then the
        # view box's range fitted to its data, as a paint would begin
        QCoreApplication.sendPostedEvents(None, QEvent.LayoutRequest)
        view.scene().prepareForPaint()
        axes = unprepared_axes(view)
        if not axes:
            break
        for axis in axes:
            _paint(axis, view, scratch)
            yield
        for item in view.scene().items():
            if not isinstance(item, pg.AxisItem):
                _paint(item, view, scratch)
        yield


def _lay_out(widget: QWidget) -> None:
    """Deliver the resize events ``widget`` and its children wait for, parents first, as
    their show would: a widget not on screen is only told its new size when shown, and
    lays out its children then (a splitter, a scroll area's viewport, pyqtgraph's plot from
    its viewport's resize)."""
    if widget.testAttribute(Qt.WA_PendingResizeEvent):
        widget.setAttribute(Qt.WA_PendingResizeEvent, False)
        QCoreApplication.sendEvent(widget, QResizeEvent(widget.size(), widget.size()))
    if widget.layout() is not None:
        widget.layout().activate()
    for child in widget.children():
        if isinstance(child, QWidget) and not child.isWindow() and not child.isHidden():
            _lay_out(child)


def _paint(item: QGraphicsItem, view: pg.GraphicsView, scratch: QImage) -> None:
    if not item.isVisible() or item.flags() & QGraphicsItem.ItemHasNoContents:
        return
    opt = QStyleOptionGraphicsItem()
    opt.exposedRect = item.boundingRect()
    painter = QPainter(scratch)
    try:
        painter.setTransform(item.deviceTransform(view.viewportTransform()))
        item.paint(painter, opt, None)
    finally:
        painter.end()
