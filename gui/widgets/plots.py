"""pyqtgraph helpers: live curves with batched redraws, result plots, image/vector export.

Only the GUI thread draws: the worker's progress arrives as queued signals that append numbers to
buffers here, and the owner's QTimer (gui.widgets.curve_board) pushes the buffers into the curves of
one plot per tick, a tick every ``REDRAW_MS`` / 4, so a fast solver cannot flood the event loop with
repaints.

This module draws; it must not compute models or metrics.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter
from shiboken6 import isValid

from ..logic.evaluate import MAX_SCATTER, drawn_rows

__all__ = ["configure", "CellTexts", "LivePlot", "LIVE_CURVE", "ResultPlot", "PALETTE",
           "export_plot", "pen", "scatter",
           "thin_points", "MAX_SCATTER"]

#: a live plot is redrawn at most every REDRAW_MS while four wait (a tick every REDRAW_MS / 4,
#: one plot a tick). A redraw after new points costs the GUI thread 8-10 ms under X (the axes'
#: new ticks and labels, the paint), and on the loaded machine each such turn was followed by
#: a wait for a core of about ten times as long (bench_gui_load --load 4, GreedyMK: a redraw
#: every 100 ms, a 90-150 ms gap after each): once a second a plot, one plot every 250 ms
REDRAW_MS = 1000
#: how a live curve is drawn: without antialiasing (an antialiased 2-pixel line through a
#: noisy curve of 400 points costs 57 ms of the GUI thread per paint, 3 ms without), only the
#: points in view, and at most a few per pixel column (the peaks kept) once a curve has more
#: points than the plot has pixels
LIVE_CURVE = {"antialias": False, "clipToView": True, "autoDownsample": True,
              "downsampleMethod": "peak", "skipFiniteCheck": True}
#: of those, what a PlotItem imposes on every curve added to it (its context menu's state)
_PLOT_WIDE = ("clipToView", "autoDownsample", "downsampleMethod")
#: a curve with fewer points than this shows them as dots once its run has ended (and while it
#: has fewer than MARKED_LIVE during the run): pyqtgraph's symbols cost a live redraw of a
#: growing 30-point curve 7.8 ms of the GUI thread under X, 1.1 ms without
MARKED, MARKED_LIVE = 40, 3
#: a live plot's axes change only when its points leave them (or fill less than FOLLOW_FILL of
#: them): a redraw whose axes stay costs the GUI thread the curve's repaint alone, one whose axes
#: move lays out and paints both axes' ticks and labels again and repaints the whole plot.
#: The x axis then reaches FOLLOW_AHEAD of the data's span past the last point (a fit's x only
#: grows), the y axis FOLLOW_MARGIN of it beyond both ends, and FOLLOW_AHEAD beyond the side
#: the points left it through when it moves; when the run ends the axes fit the data exactly,
#: the x axis from its first to its last point
FOLLOW_AHEAD, FOLLOW_MARGIN, FOLLOW_FILL = 0.5, 0.1, 0.4
#: the levels of ticks (and grid lines) an axis draws: major and minor
TICK_LEVELS = 2
#: colour-blind friendly (Okabe-Ito)
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000")


def configure() -> None:
    """Global pyqtgraph options of the app (light background, antialiased lines)."""
    pg.setConfigOptions(antialias=True, background="w", foreground="#222", useOpenGL=False)


def pen(i: int, width: float = 2.0, dash: bool = False):
    p = pg.mkPen(PALETTE[i % len(PALETTE)], width=width)
    if dash:
        from PySide6.QtCore import Qt
        p.setStyle(Qt.DashLine)
    return p


def thin_points(x: np.ndarray, y: np.ndarray, limit: int | None = None, seed: int = 0):
    """``(x, y, n, idx)``: at most ``limit`` (MAX_SCATTER) of the n points, the rows
    :func:`gui.logic.evaluate.drawn_rows` picks (idx None: all of them)."""
    n = len(x)
    idx = drawn_rows(n, limit, seed)
    if idx is None:
        return x, y, n, None
    return x[idx], y[idx], n, idx



class _Legend(pg.LegendItem):
    """pyqtgraph's legend, whose anchor does nothing once its ViewBox is deleted.

    A plot deleted with its window or tab deletes its ViewBox before the legend in it; the
    legend's last change of geometry then asked the deleted ViewBox for its rectangle and
    raised in the event loop (RuntimeError: Internal C++ object (ViewBox) already deleted).
    """

    def _GraphicsWidgetAnchor__geometryChanged(self):
        parent = self._GraphicsWidgetAnchor__parent
        if parent is not None and not isValid(parent):
            return
        super()._GraphicsWidgetAnchor__geometryChanged()

class Dots(pg.GraphicsObject):
    """Round dots of one colour, painted by one QPainter.drawPoints call.

    pyqtgraph's ScatterPlotItem styles every point in Python (about 10 ms per 1000 points to
    set up and as much to paint); a cosmetic round pen over a QPolygonF draws a few thousand
    points in a few milliseconds. Enough for scatters where every point looks the same.
    """

    def __init__(self, x, y, color, size: float = 5.0, name: str | None = None):
        super().__init__()
        x = np.asarray(x, float)
        y = np.asarray(y, float)
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        self._poly = pg.functions.create_qpolygonf(len(x))
        arr = pg.functions.ndarray_from_qpolygonf(self._poly)
        arr[:, 0], arr[:, 1] = x, y
        self._n = len(x)
        self._bounds = ((float(x.min()), float(x.max())), (float(y.min()), float(y.max()))) \
            if len(x) else ((0.0, 0.0), (0.0, 0.0))
        self._pen = pg.mkPen(color, width=size)
        self._pen.setCosmetic(True)
        self._pen.setCapStyle(Qt.RoundCap)
        self._size = float(size)
        self._name = name
        # what pyqtgraph's legend reads to draw the sample symbol
        self.opts = {"pen": None, "brush": pg.mkBrush(color), "size": size, "symbol": "o",
                     "fillLevel": None, "antialias": True}

    def name(self):
        return self._name

    def __len__(self) -> int:
        return self._n

    def dataBounds(self, ax, frac=1.0, orthoRange=None):
        return self._bounds[ax]

    def pixelPadding(self):
        return self._size

    def boundingRect(self):
        (x0, x1), (y0, y1) = self._bounds
        # one pixel's worth around the data, so that edge dots are repainted
        px, py = self.pixelLength(pg.Point(1, 0)) or 0.0, self.pixelLength(pg.Point(0, 1)) or 0.0
        pad_x, pad_y = self._size * (px or 0.0), self._size * (py or 0.0)
        return QRectF(x0 - pad_x, y0 - pad_y, (x1 - x0) + 2 * pad_x, (y1 - y0) + 2 * pad_y)

    def paint(self, painter, *args):
        painter.setRenderHint(QPainter.Antialiasing, False)
        painter.setPen(self._pen)
        painter.drawPoints(self._poly)


class CellTexts(pg.GraphicsObject):
    """Short texts centred on points of the view (a confusion matrix's counts), in the plot's
    font at the screen's size whatever the view's scale, painted by one item.

    A pyqtgraph TextItem per cell is a QGraphicsTextItem with a rich-text document laid out
    when it is made and placed again at every change of the view (2-3 ms of the GUI thread a
    row of cells under X, bench_gui_load --record-turns); a cell's text here is one drawText.
    """

    def __init__(self, cells, rect: QRectF):
        """``cells``: (x, y, text, colour) each; ``rect``: the view area they lie in."""
        super().__init__()
        self.cells = [(float(x), float(y), str(text), QColor(color))
                      for x, y, text, color in cells]
        self._rect = QRectF(rect)

    def texts(self) -> list[str]:
        """The cells' texts, in the order given (what a test or an export reads)."""
        return [text for _, _, text, _ in self.cells]

    def dataBounds(self, ax, frac=1.0, orthoRange=None):
        r = self._rect
        return (r.left(), r.right()) if ax == 0 else (r.top(), r.bottom())

    def boundingRect(self):
        return QRectF(self._rect)

    def paint(self, painter, *args):
        # at the device's scale: the text keeps its size in pixels when the view zooms
        to_device = painter.transform()
        painter.save()
        painter.resetTransform()
        painter.setFont(self.scene().font() if self.scene() is not None else QFont())
        for x, y, text, color in self.cells:
            centre = to_device.map(pg.Point(x, y))
            painter.setPen(color)
            painter.drawText(QRectF(centre.x() - 100, centre.y() - 50, 200, 100),
                             Qt.AlignCenter, text)
        painter.restore()


def scatter(x, y, brush, name: str | None = None, size: float = 5) -> Dots:
    """A scatter of round dots of the brush's colour (see :class:`Dots`)."""
    color = brush.color() if hasattr(brush, "color") else brush
    return Dots(x, y, color, size, name)


class ResultPlot(pg.PlotWidget):
    """A PlotWidget with a title, axis labels and a legend, used for every static result plot."""

    #: grid lines behind the data (each axis then paints over the whole plot)
    GRID = True
    #: a legend naming the curves
    LEGEND = True

    def __init__(self, title: str = "", xlabel: str = "", ylabel: str = "", parent=None,
                 legend_offset=(-10, 10)):
        super().__init__(parent=parent)
        self.setMinimumHeight(160)
        self._shown_title = None
        self.set_title(title)
        self.setLabel("bottom", xlabel)
        self.setLabel("left", ylabel)
        self.showGrid(x=self.GRID, y=self.GRID, alpha=0.25)
        for ax in ("left", "bottom"):
            self.getAxis(ax).enableAutoSIPrefix(False)
            # ticks and grid lines at two levels, not pyqtgraph's default three (its finest,
            # unlabelled, at a tenth of the major spacing, had most of the grid's lines): a
            # result plot's first paint under X 15-29 ms -> 10-13 ms, a repaint 6-18 -> 4-5 ms
            self.getAxis(ax).setStyle(maxTickLevel=TICK_LEVELS - 1)
        self.legend = None
        if self.LEGEND:
            # PlotItem.addLegend, with a legend that outlives its ViewBox quietly
            item = self.getPlotItem()
            item.legend = self.legend = _Legend(offset=legend_offset)
            self.legend.setParentItem(item.vb)

    def set_title(self, title: str) -> None:
        """Show ``title`` above the plot, elided to the plot's width (the whole title in the
        tooltip and in exports)."""
        self.plot_title = title
        self._shown_title = None
        self._fit_title()

    def _fit_title(self, width: int | None = None) -> None:
        # pyqtgraph's title takes its text's width as its minimum width: a title wider than
        # the widget made the plot wider than the widget, its right part (axis, last tick
        # label) cut off; the text is plain, so it is elided rather than wrapped
        title = self.plot_title or ""
        font = QFont(self.font())
        font.setPointSizeF(11)
        item = self.getPlotItem()
        if item is None:                # (closing)
            return
        width = self.width() if width is None else width
        room = max(width - 60, 60)
        for _ in range(3):
            shown = QFontMetrics(font).elidedText(title, Qt.ElideRight, room)
            if shown == self._shown_title:
                return
            self._shown_title = shown
            item.setTitle(shown, size="11pt")
            self.setToolTip(title if shown != title else "")
            # the title sits over the view's column, beside the left axis, and its rich text
            # has margins of its own: what the plot then needs beyond the width comes off the
            # room once more
            over = item.effectiveSizeHint(Qt.MinimumSize).width() - width
            if over <= 0 or room <= 60:
                return
            room = max(int(room - over - 2), 60)

    def resizeEvent(self, ev) -> None:
        # the title first: the view then lays the plot out at the new width with it
        if getattr(self, "plot_title", None):      # (PlotWidget's own init resizes first)
            self._fit_title(ev.size().width())
        super().resizeEvent(ev)

    def reset(self, title: str | None = None, xlabel: str | None = None,
              ylabel: str | None = None, keep_curves: bool = False) -> list:
        """Empty the plot for a new drawing and set its title and labels (None: unchanged).
        ``keep_curves``: the curves (PlotDataItems) and their legend entries stay, for the
        caller to give them new data (:meth:`put_curve`) or remove them; returns them."""
        kept = self.listDataItems() if keep_curves else []
        if kept:
            # only the rest goes (a message, an image): removing a curve and its legend entry
            # and making one again cost 2-3 ms each of the GUI thread, the legend laid out
            # again at each
            for item in [it for it in self.getPlotItem().items if it not in kept]:
                self.removeItem(item)
        else:
            self.clear()
            if self.legend is not None:
                self.legend.clear()
        self.setLogMode(False, False)
        self.showGrid(x=self.GRID, y=self.GRID, alpha=0.25)
        self.enableAutoRange()
        # a title or an axis label set again lays its rich text out again (3-7 ms of the GUI
        # thread under X each): only what changed is set
        if title is not None and (title != self.plot_title
                                  or not self.getPlotItem().titleLabel.isVisible()):
            self.set_title(title)
        for side, text in (("bottom", xlabel), ("left", ylabel)):
            axis = self.getAxis(side)
            if text is not None and (text != axis.labelText or not axis.label.isVisible()):
                self.setLabel(side, text)
        return kept

    def put_curve(self, n: int, x, y, name: str | None = None, **style) -> pg.PlotDataItem:
        """The ``n``-th curve (in the order they were added) gets ``x``, ``y``, ``style`` and
        the legend entry ``name``; a new curve when the plot has ``n`` curves (the plot's
        :meth:`plot`)."""
        items = self.listDataItems()
        if n >= len(items):
            return self.plot(x, y, name=name, **style)
        item = items[n]
        item.setData(x, y, name=name, **style)
        label = self.legend.getLabel(item) if self.legend is not None else None
        if label is not None and label.text != name:
            label.setText(name)
        return item

    def remove_curves(self, start: int) -> None:
        """Remove the curves from the ``start``-th on, with their legend entries."""
        for item in self.listDataItems()[start:]:
            self.removeItem(item)

    def fit_x(self, xs) -> None:
        """The x axis spans exactly the data's x values (no padding: a curve of iterations,
        folds or candidates starts at its first x, never at a negative one); the y axis keeps
        following the data. No-op on a log x axis or without finite values."""
        xs = [np.asarray(x, float) for x in xs if len(x)]
        if not xs or self.getPlotItem().ctrl.logXCheck.isChecked():
            return
        allx = np.concatenate(xs)
        allx = allx[np.isfinite(allx)]
        if not allx.size:
            return
        lo, hi = float(allx.min()), float(allx.max())
        self.setXRange(lo, hi if hi > lo else lo + 1.0, padding=0)

    def add_dots(self, dots: "Dots") -> None:
        """Add a :class:`Dots` scatter with its legend entry (pyqtgraph lists only its own
        plot-data items by itself)."""
        self.addItem(dots)
        if dots.name():
            self.legend.addItem(dots, dots.name())

    def message(self, text: str) -> None:
        """Replace the content with a centred explanation (nothing to draw for this model)."""
        self.reset()
        item = pg.TextItem(text, color="#555", anchor=(0.5, 0.5))
        self.addItem(item)
        item.setPos(0.5, 0.5)
        self.setXRange(0, 1)
        self.setYRange(0, 1)


class LivePlot(ResultPlot):
    """Curves fed point by point from progress events; :meth:`redraw` pushes the pending points
    and the pending title and axes into the drawn plot (its owner calls it from a timer, see
    gui.widgets.curve_board), so that every change to the drawing happens in the plot's own turn.

    No grid: under X a live plot's repaint after a new point cost the GUI thread 10.5 ms with
    pyqtgraph's grid and 2.3 ms without (the grid makes each axis repaint the whole plot), and
    a fit's plots are repainted several times a second. No legend: a live plot shows one
    quantity, which its title names, and a legend entry is rich text laid out when its curve
    is created and moved at every change of the plot's layout (1-3 ms of the GUI thread a
    redraw under load, bench_gui_load --record-turns)."""

    GRID = False
    LEGEND = False

    def __init__(self, title: str = "", xlabel: str = "", ylabel: str = "", parent=None):
        super().__init__(title, xlabel, ylabel, parent)
        self._data: dict[str, tuple[list, list]] = {}
        self._curves: dict[str, pg.PlotDataItem] = {}
        self._styles: dict[str, dict] = {}
        self._dirty = False
        self._restart: tuple | None = None      # (title, x label, log x, log y) to apply
        self._xlabel = xlabel
        self._live = False                      # a run is feeding the curves (restart)
        self._log = (False, False)              # the axes' log modes drawn
        self._view: tuple | None = None         # the (x0, x1, y0, y1) the plot was given
        self.setClipToView(LIVE_CURVE["clipToView"])
        self.setDownsampling(auto=LIVE_CURVE["autoDownsample"],
                             mode=LIVE_CURVE["downsampleMethod"])

    @property
    def dirty(self) -> bool:
        """Points, titles or axes wait to be drawn."""
        return self._dirty

    @property
    def x_label(self) -> str:
        """The x-axis label the plot shows, or shows from its next :meth:`redraw`."""
        return self._xlabel

    def restart(self, title: str | None = None, xlabel: str | None = None,
                log_x: bool = False, log_y: bool = False) -> None:
        """Forget the curves now; at the next :meth:`redraw`, remove them from the drawing and
        apply ``title`` and the axes (None keeps the title and x label): laying out a title
        costs 3-7 ms, in the redraw's turn, not the caller's."""
        self._data.clear()
        self._styles.clear()
        self._live = True
        if xlabel is not None:
            self._xlabel = xlabel
        self._restart = (title, xlabel, bool(log_x), bool(log_y))
        self._dirty = True

    def settle(self) -> None:
        """The run feeding the curves has ended: short curves get their dots at the next
        :meth:`redraw`."""
        self._live = False
        self._dirty = True

    def relabel_x(self, xlabel: str) -> None:
        """Change the x-axis label at the next :meth:`redraw`."""
        self._xlabel = xlabel
        self._dirty = True

    def _remove_curves(self) -> None:
        for c in self._curves.values():
            self.removeItem(c)
        self._curves.clear()

    def curve_names(self) -> list[str]:
        return list(self._data)

    def curve_data(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        x, y = self._data[name]
        return np.asarray(x, float), np.asarray(y, float)

    def append(self, name: str, x: float, y: float) -> None:
        if not (math.isfinite(x) and math.isfinite(y)):
            return
        xs, ys = self._data.setdefault(name, ([], []))
        xs.append(float(x))
        ys.append(float(y))
        self._dirty = True

    def set_curve(self, name: str, x, y, *, index: int | None = None, dash: bool = False) -> None:
        x = np.asarray(x, float)
        y = np.asarray(y, float)
        ok = np.isfinite(x) & np.isfinite(y)
        self._data[name] = (list(x[ok]), list(y[ok]))
        if index is not None or dash:
            self._styles[name] = {"index": index, "dash": dash}
        self._dirty = True

    def redraw(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        # one costly change a turn (gui.widgets.steps): a new run's title and axes, then each
        # new curve, each at a later redraw; the points of the curves drawn so far go with them
        if self._restart is not None:
            title, xlabel, log_x, log_y = self._restart
            self._restart = None
            self._remove_curves()
            self.reset(title, xlabel)
            self.setLogMode(log_x, log_y)
            self.disableAutoRange()             # the axes follow the points: _follow
            self._log, self._view = (log_x, log_y), None
            self._dirty = bool(self._data)
            return
        if self.getAxis("bottom").labelText != self._xlabel:
            self.setLabel("bottom", self._xlabel)
        created = False
        for i, (name, (xs, ys)) in enumerate(self._data.items()):
            curve = self._curves.get(name)
            if curve is None and created:
                self._dirty = True
                continue
            if curve is None:
                created = True
                st = self._styles.get(name, {})
                idx = st.get("index")
                curve = self.plot([], [], name=name,
                                  pen=pen(i if idx is None else idx, dash=st.get("dash", False)),
                                  symbolSize=4,
                                  **{k: v for k, v in LIVE_CURVE.items()
                                     if k not in _PLOT_WIDE})
                self._curves[name] = curve
            marked = len(xs) < (MARKED_LIVE if self._live else MARKED)
            if (curve.opts["symbol"] is not None) != marked:
                curve.setSymbol("o" if marked else None)
            curve.setData(np.asarray(xs), np.asarray(ys))
        self._follow()

    def _follow(self) -> None:
        """Give the axes the range the drawn points need, leaving them as they are while the
        points stay inside and fill enough of them (FOLLOW_AHEAD, FOLLOW_MARGIN, FOLLOW_FILL);
        exactly the points' range once the run has ended."""
        drawn = [(np.asarray(self._data[n][0], float), np.asarray(self._data[n][1], float))
                 for n in self._curves if n in self._data and self._data[n][0]]
        if not drawn:
            return
        x, y = np.concatenate([d[0] for d in drawn]), np.concatenate([d[1] for d in drawn])
        # on a log axis the view's coordinates are the log10 of the values, and a value <= 0
        # is not drawn
        x = np.log10(x[x > 0]) if self._log[0] else x
        y = np.log10(y[y > 0]) if self._log[1] else y
        if not (x.size and y.size):
            return
        (x0, x1), (y0, y1) = follow_range(x, self._live, ahead=True), \
            follow_range(y, self._live, ahead=False)
        view = self._view
        if view is not None and self._live:
            vx0, vx1, vy0, vy1 = view
            if not moved(x, vx0, vx1, start=True):
                x0, x1 = vx0, vx1
            if not moved(y, vy0, vy1, start=False):
                y0, y1 = vy0, vy1
            else:
                y0, y1 = grow_range(y, vy0, vy1, y0, y1)
        if (x0, x1, y0, y1) != view:
            self._view = (x0, x1, y0, y1)
            self.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0)

    def flush(self) -> None:
        """Draw pending points now (tests and exports)."""
        self._dirty = True
        for _ in range(len(self._data) + 2):        # the restart, then a new curve a redraw
            if not self._dirty:
                break
            self.redraw()

    def request_redraw(self) -> None:
        """Draw at the owner's next redraw (not now: the caller's turn stays short)."""
        self._dirty = True


def follow_range(v: np.ndarray, live: bool, ahead: bool) -> tuple[float, float]:
    """The axis range a live plot gives the values ``v`` (finite, not empty): during a run
    FOLLOW_AHEAD of their span past the largest (``ahead``, the x axis: from the smallest) or
    FOLLOW_MARGIN of it beyond both ends; after it, exactly their range (``ahead``) or with
    half that margin (the y axis)."""
    lo, hi = float(v.min()), float(v.max())
    span = hi - lo if hi > lo else max(abs(lo), 1.0)
    if ahead:
        return lo, (lo + span * (1 + FOLLOW_AHEAD) if live else (hi if hi > lo else lo + 1.0))
    pad = span * (FOLLOW_MARGIN if live else FOLLOW_MARGIN / 2)
    return lo - pad, hi + pad


def grow_range(v: np.ndarray, lo: float, hi: float, new_lo: float, new_hi: float
               ) -> tuple[float, float]:
    """The live y range replacing [lo, hi] (the values ``v`` left it): ``(new_lo, new_hi)``
    with FOLLOW_AHEAD of the values' span beyond the side they left through, so that a
    quantity that keeps growing or falling (a norm, the number of non-zero coefficients, a
    loss) moves its axis a few times in a run, not at every redraw (each move lays out both
    axes' ticks again and paints the plot twice)."""
    vlo, vhi = float(v.min()), float(v.max())
    span = vhi - vlo if vhi > vlo else max(abs(vlo), 1.0)
    if vhi > hi:
        new_hi = vhi + span * FOLLOW_AHEAD
    if vlo < lo:
        new_lo = vlo - span * FOLLOW_AHEAD
    return new_lo, new_hi


def moved(v: np.ndarray, lo: float, hi: float, start: bool) -> bool:
    """Whether a live axis showing [lo, hi] must change for the values ``v``: some fall
    outside, they fill less than FOLLOW_FILL of it, or (``start``, the x axis) the smallest is
    no longer where the axis starts."""
    vlo, vhi = float(v.min()), float(v.max())
    if vlo < lo or vhi > hi or (start and vlo != lo):
        return True
    return (vhi - vlo) < FOLLOW_FILL * (hi - lo)


def export_plot(widget: pg.PlotWidget, path: str, width: int = 1200) -> str:
    """Write ``widget``'s plot to ``path`` as PNG (raster, ``width`` pixels) or SVG (vector)."""
    import pyqtgraph.exporters as pge
    item = widget.getPlotItem()
    lower = path.lower()
    if lower.endswith(".svg"):
        _export_svg(widget, path)
        return path
    if lower.endswith(".png"):
        exporter = pge.ImageExporter(item)
        exporter.parameters()["width"] = int(width)
        exporter.parameters()["background"] = QColor("white")
    else:
        raise ValueError(f"unknown plot format for {path!r}: use .png or .svg")
    exporter.export(path)
    return path


def _export_svg(widget: pg.PlotWidget, path: str) -> None:
    """Paint the plot onto Qt's SVG generator: the scene's items stay vector paths and text.

    (pyqtgraph's SVGExporter fails on the path syntax of recent Qt versions,
    pyqtgraph/pyqtgraph#3485.)
    """
    from PySide6.QtCore import QRect, QSize
    from PySide6.QtGui import QPainter
    from PySide6.QtSvg import QSvgGenerator
    size = widget.size()
    if size.width() < 10 or size.height() < 10:
        size = QSize(800, 500)
        widget.resize(size)
    gen = QSvgGenerator()
    gen.setFileName(path)
    gen.setSize(size)
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    gen.setTitle(getattr(widget, "plot_title", "") or "rwtool plot")
    gen.setDescription("exported by rwtool-gui")
    painter = QPainter()
    if not painter.begin(gen):
        raise OSError(f"cannot write {path}")
    try:
        widget.render(painter)
    finally:
        painter.end()
