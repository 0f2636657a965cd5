"""The method panel: pick a method and fill a form generated from its estimator's parameters.

The methods are rwtool.report.METHODS; the form is built from gui.logic.methods.param_specs, which
reads the estimator's parameter table (defaults, choices, ranges, tooltips with the paper's
symbols, which parameters a choice disables); every field is checked against its entry as it is
typed, and the estimator's own validation (the same table, and the rules between parameters) runs
before training. The derived quantities of the chosen model (gamma from theta or kappa with theta
and kappa of seed 003 Table 2, the SGD step-size offset, BKerNN's automatic lambda) are recomputed
as the user edits, by the estimators' own rules (``width_rule``, ``step_rule``, ``resolved_reg``):
what the form shows is what the fit uses. Those rules, and which field matters for which choice,
are gui.logic.method_rules; this module draws the form.

Each estimator class gets its form (a page) once, built a few fields a step (gui.widgets.steps)
after the window starts or at once when chosen first, and kept: choosing a method shows its page
and hides the previous one, so the values typed for a method stay on its page when the user
switches away and back (docs/GUI.md).

This widget builds estimators; it must not fit them.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                               QLineEdit, QScrollArea, QToolButton, QVBoxLayout, QWidget)

from rwtool.report import METHODS

from ..logic import custom_instantiation
from ..logic.method_rules import (DataStats, derived_quantities, relevance_rules,
                                  theta_hint)
from ..logic.methods import ParamSpec, format_value, param_specs, parse_value
from ..widgets.steps import Steps

__all__ = ["MethodPanel"]


_ERROR_STYLE = "QLineEdit { border: 1px solid #b3261e; background: #fdf0ef; }"


class _Field:
    """One editor of the form and how to read it."""

    def __init__(self, spec: ParamSpec, on_change):
        self.spec = spec
        self.error: str | None = None
        if spec.kind == "bool":
            w = QCheckBox()
            w.setChecked(bool(spec.default))
            w.toggled.connect(on_change)
        elif spec.kind == "choice":
            w = QComboBox()
            for c in spec.choices:
                w.addItem(str(c), c)
            if spec.default is not None:
                w.setCurrentText(str(spec.default))
            w.currentIndexChanged.connect(on_change)
        else:
            w = QLineEdit(format_value(spec.initial))
            hints = list(spec.keywords)
            if spec.allows_none:
                hints.append("empty = None")
            if hints:
                w.setPlaceholderText(" / ".join(hints))
            w.textChanged.connect(on_change)
        w.setToolTip(spec.tooltip)
        self.widget = w
        self.row = w      # what the form shows: the editor, or the editor and its Auto button
        if isinstance(w, QLineEdit) and "auto" in spec.keywords:
            button = QToolButton()
            button.setText("Auto")
            # what "auto" does differs (cross-validation, a rule of thumb): the table says
            button.setToolTip(f"{spec.name}=\"auto\": {spec.doc}")
            button.clicked.connect(lambda: w.setText("auto"))
            self.row = QWidget()
            box = QHBoxLayout(self.row)
            box.setContentsMargins(0, 0, 0, 0)
            box.addWidget(w, 1)
            box.addWidget(button)
            self.auto_button = button

    def value(self):
        w, spec = self.widget, self.spec
        if spec.kind == "bool":
            return w.isChecked()
        if spec.kind == "choice":
            return w.currentData()
        return parse_value(spec, w.text())

    def set_value(self, v) -> None:
        w, spec = self.widget, self.spec
        if spec.kind == "bool":
            w.setChecked(bool(v))
        elif spec.kind == "choice":
            i = w.findData(v)
            if i >= 0:
                w.setCurrentIndex(i)
        else:
            w.setText(format_value(v))

    def check(self) -> str | None:
        """Parse the field; mark it red and return the problem, or None."""
        try:
            self.value()
            self.error = None
        except ValueError as exc:
            self.error = str(exc)
        style = _ERROR_STYLE if self.error else ""
        # restyling polishes the editor again even when nothing changed: only on a change
        if isinstance(self.widget, QLineEdit) and self.widget.styleSheet() != style:
            self.widget.setStyleSheet(style)
        return self.error


#: fields of a form built in one step of the background building
_FIELDS_A_STEP = 4


class _Page:
    """The form of one estimator class: its editors, labels and rules, kept while the panel
    lives."""

    def __init__(self, fam, cls):
        self.family = fam
        self.cls = cls
        self.specs = custom_instantiation.with_fields(param_specs(cls))
        if fam.primary:
            self.specs.sort(key=lambda s: s.name != fam.primary)
        self.relevance = relevance_rules(self.specs)
        self.fields: dict[str, _Field] = {}
        self.labels: dict[str, QLabel] = {}
        self.main = QWidget()
        self.form = QFormLayout(self.main)
        self.form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        self.advanced = QWidget()
        self.advanced_form = QFormLayout(self.advanced)
        self.advanced_form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        self.builds = 0          # editors created on this page (tests: once each)

    @property
    def complete(self) -> bool:
        return len(self.fields) == len(self.specs)

    def build(self, on_change):
        """Create the editors not created yet, yielding every few (a generator)."""
        for spec in self.specs:
            if spec.name in self.fields:
                continue
            field = _Field(spec, on_change)
            label = QLabel(spec.name)
            label.setToolTip(spec.tooltip)
            self.fields[spec.name] = field
            self.labels[spec.name] = label
            self.builds += 1
            (self.advanced_form if spec.advanced else self.form).addRow(label, field.row)
            if len(self.fields) % _FIELDS_A_STEP == 0 and not self.complete:
                yield


class MethodPanel(QWidget):
    """Method choice, parameter form, derived quantities and validation."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.families = list(METHODS.values())
        self.task = "binary"
        self.X: np.ndarray | None = None
        self._stats: DataStats | None = None
        self._stats_steps = Steps(self)
        self._fields: dict[str, _Field] = {}     # the shown page's
        self._labels: dict[str, QLabel] = {}
        self._memory: dict[str, dict] = {}     # per family: values the user typed
        self._relevance: dict = {}
        self._building = False
        self._quiet = False                    # set_method: one recomputation at its end
        self._derived_rows: list | None = None
        self._shown_family: str | None = None

        self.method_combo = QComboBox()
        for f in self.families:
            self.method_combo.addItem(f.title, f.key)
        self.method_combo.setToolTip("The learning method (see docs/GUI.md for the papers)")
        self.paper_label = QLabel()
        self.paper_label.setObjectName("paperLabel")
        self.paper_label.setWordWrap(True)

        # the pages' forms stacked in two hosts, only the chosen page's shown: a hidden widget
        # takes no room in a layout, so the scroll area is as tall as the form on screen
        self.form_host = QWidget()
        self._form_stack = QVBoxLayout(self.form_host)
        self._form_stack.setContentsMargins(0, 0, 0, 0)
        self.advanced_toggle = QToolButton()
        self.advanced_toggle.setText("Advanced parameters")
        self.advanced_toggle.setCheckable(True)
        self.advanced_toggle.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.advanced_toggle.setArrowType(Qt.RightArrow)
        self.advanced_toggle.setStyleSheet("QToolButton { border: none; font-weight: bold; }")
        self.advanced_host = QWidget()
        self._advanced_stack = QVBoxLayout(self.advanced_host)
        self._advanced_stack.setContentsMargins(0, 0, 0, 0)
        self.advanced_host.setVisible(False)
        self._pages: dict[type, _Page] = {}
        self._page: _Page | None = None
        self._page_steps = Steps(self)

        self.derived_box = QGroupBox("Derived quantities")
        self.derived_form = QFormLayout(self.derived_box)
        self.error_label = QLabel()
        self.error_label.setObjectName("methodError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #b3261e;")

        inner = QWidget()
        v = QVBoxLayout(inner)
        v.setContentsMargins(0, 0, 0, 0)
        v.addWidget(self.form_host)
        v.addWidget(self.advanced_toggle)
        v.addWidget(self.advanced_host)
        v.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)
        scroll.setFrameShape(QScrollArea.NoFrame)

        head = QFormLayout()
        head.addRow("Method", self.method_combo)
        lay = QVBoxLayout(self)
        lay.addLayout(head)
        lay.addWidget(self.paper_label)
        lay.addWidget(scroll, 1)
        lay.addWidget(self.derived_box)
        lay.addWidget(self.error_label)

        self.method_combo.currentIndexChanged.connect(self._method_changed)
        self.advanced_toggle.toggled.connect(self._toggle_advanced)
        self._rebuild()
        self._build_pages_later()

    # -- structure ----------------------------------------------------------------------------
    def _method_changed(self) -> None:
        # Keep what was typed for the family being left, to restore it on coming back.
        self._remember()
        self._rebuild()

    def _toggle_advanced(self, on: bool) -> None:
        self.advanced_host.setVisible(on)
        self.advanced_toggle.setArrowType(Qt.DownArrow if on else Qt.RightArrow)

    def family(self):
        key = self.method_combo.currentData()
        return next((f for f in self.families if f.key == key), None)

    def estimator_class(self):
        fam = self.family()
        return None if fam is None else fam.estimator_class(self.task)

    def set_task(self, task: str) -> None:
        """Classification or regression decides the class of each family (and which exist)."""
        if task == self.task:
            return
        self._remember()
        self.task = task
        model = self.method_combo.model()
        for i, f in enumerate(self.families):
            ok = f.estimator_class(task) is not None
            item = model.item(i)
            item.setEnabled(ok)
            item.setToolTip("" if ok else f"{f.title} has no estimator for {task} in this "
                                          f"rwtool")
        fam = self.family()
        if fam is not None and fam.estimator_class(task) is None:
            first = next((i for i, f in enumerate(self.families)
                          if f.estimator_class(task) is not None), 0)
            self.method_combo.setCurrentIndex(first)   # triggers _rebuild
        else:
            self._rebuild()
        self._build_pages_later()

    def set_data(self, X: np.ndarray | None) -> None:
        self.X = X
        # the passes over the rows a block a step (gui.widgets.steps): at once they were the
        # longest turn of opening a 200,000-row file (17 ms under load)
        self._stats = None
        self._stats_steps.clear()
        if X is not None and X.ndim == 2 and X.size:
            self._stats_steps.add(self._compute_stats, DataStats(X, later=True))
        self._update_derived()

    def _compute_stats(self, stats: DataStats):
        yield from stats.steps()
        self._stats = stats
        self._update_derived()

    @property
    def computing(self) -> bool:
        """True while the derived quantities wait for the passes over the training rows."""
        return self._stats_steps.busy

    def _remember(self) -> None:
        """Keep the values the user changed from those the form starts at, per family (the
        same family's page of the other task starts from them)."""
        if self._shown_family is None or not self._fields:
            return
        mem = self._memory.setdefault(self._shown_family, {})
        for name, f in self._fields.items():
            if f.check() is None:
                v = f.value()
                if v != f.spec.initial:
                    mem[name] = v
                else:
                    mem.pop(name, None)

    def _clear_form(self, form: QFormLayout) -> None:
        while form.rowCount():
            form.removeRow(0)

    def _page_for(self, fam, cls) -> _Page:
        page = self._pages.get(cls)
        if page is None:
            page = self._pages[cls] = _Page(fam, cls)
            page.main.setVisible(False)
            page.advanced.setVisible(False)
            self._form_stack.addWidget(page.main)
            self._advanced_stack.addWidget(page.advanced)
        return page

    def _build_pages_later(self) -> None:
        """Queue the forms of the task's other methods, a few fields a step, so that the
        first choice of each only shows its page (building one at once was a turn of the GUI
        thread of 7-25 ms)."""
        for fam in self.families:
            cls = fam.estimator_class(self.task)
            if cls is not None and not self._page_for(fam, cls).complete:
                # an editor is connected after its starting value is set: building emits
                # nothing the form would take for an edit
                self._page_steps.add(self._pages[cls].build, self._field_changed)

    def _rebuild(self) -> None:
        """Show the chosen method's page (building what it lacks) with the values kept for
        the method."""
        if self._building:
            return
        self._building = True
        try:
            fam = self.family()
            cls = self.estimator_class()
            page = None if fam is None or cls is None else self._page_for(fam, cls)
            if page is not self._page:
                if self._page is not None:
                    self._page.main.setVisible(False)
                    self._page.advanced.setVisible(False)
                self._page = page
            self._shown_family = None if page is None else fam.key
            if page is None:
                self._fields, self._labels, self._relevance = {}, {}, {}
                self.paper_label.setText("No estimator for this task.")
                return
            for _ in page.build(self._field_changed):
                pass
            self._fields, self._labels, self._relevance = page.fields, page.labels, \
                page.relevance
            self._restore(self._memory.get(fam.key, {}))
            self.paper_label.setText(f"<i>{cls.__name__}</i> · {fam.paper}")
            page.main.setVisible(True)
            page.advanced.setVisible(True)
        finally:
            self._building = False
        self._field_changed()

    def _restore(self, memory: dict) -> None:
        """Give the page the values kept for its method: the page keeps its own, but the same
        method's page of the other task may have changed them since. A field that does not
        parse keeps the text the user typed."""
        for name, field in self._fields.items():
            if field.check() is None and field.value() != memory.get(name, field.spec.initial):
                field.set_value(memory.get(name, field.spec.initial))

    def _field_changed(self, *args) -> None:
        if self._building or self._quiet:
            return
        current = {n: self._fields[n].value() for n in ("instantiation", "mc_kernel")
                   if n in self._fields}          # choices: value() cannot fail on them
        for name, (ctrl, values) in self._relevance.items():
            if name in self._fields and ctrl in self._fields:
                v = str(self._fields[ctrl].value()).lower()
                on = v in values or custom_instantiation.uses_width(name, current)
                self._fields[name].row.setEnabled(on)
                self._labels[name].setEnabled(on)
                self._fields[name].widget.setToolTip(
                    self._fields[name].spec.tooltip + ("" if on else
                                                       f"<p><i>Not used with {ctrl}={v}.</i></p>"))
        problems = [p for f in self._fields.values() if (p := f.check())]
        self.error_label.setText("; ".join(problems))
        theta = self._fields.get("theta")
        if theta is not None and isinstance(theta.widget, QLineEdit):
            theta.widget.setPlaceholderText(theta_hint(self.params(partial=True)))
        self._update_derived()
        self.changed.emit()

    def _update_derived(self) -> None:
        fam = self.family()
        if fam is None:
            self._clear_form(self.derived_form)
            self._derived_rows = None
            return
        try:
            params = self.params(partial=True)
            if self._stats is None and self.computing:
                # the passes over the training rows are queued: not "load data"
                rows = [("", "Computing from the training rows…")]
            else:
                rows = derived_quantities(fam.key, params, self._stats)
        except (ValueError, TypeError, OverflowError, ZeroDivisionError) as exc:
            rows = [("", f"<span style='color:#b3261e'>{exc}</span>")]
        if rows == self._derived_rows:
            return          # the same labels: not built and laid out again
        self._derived_rows = rows
        self._clear_form(self.derived_form)
        self.derived_box.setVisible(bool(rows))
        for label, text in rows:
            lab = QLabel(text)
            lab.setTextInteractionFlags(Qt.TextSelectableByMouse)
            lab.setWordWrap(True)
            self.derived_form.addRow(label, lab)

    # -- values -------------------------------------------------------------------------------
    def params(self, partial: bool = False) -> dict:
        """The typed parameters; raises ValueError listing every bad field (unless partial)."""
        out, problems = {}, []
        for name, f in self._fields.items():
            if not f.widget.isEnabled():
                out[name] = f.spec.default     # a parameter this configuration does not use
                continue
            try:
                out[name] = f.value()
            except ValueError as exc:
                problems.append(str(exc))
        if problems and not partial:
            raise ValueError("; ".join(problems))
        return custom_instantiation.fold(out)

    def set_method(self, family_key: str, params: dict | None = None) -> None:
        # the form rebuilt and every value set without a recomputation each: the checks, the
        # derived quantities and the listeners run once, at the end (one per value made
        # choosing a method with three parameters one turn of 15-28 ms of the GUI thread
        # under load, bench_gui_load --record-turns)
        self._quiet = True
        try:
            i = self.method_combo.findData(family_key)
            if i >= 0:
                self.method_combo.setCurrentIndex(i)
            for name, v in custom_instantiation.unfold(params or {}).items():
                if name in self._fields:
                    self._fields[name].set_value(v)
        finally:
            self._quiet = False
        self._field_changed()

    def set_param(self, name: str, value) -> None:
        self._fields[name].set_value(value)

    def field_widget(self, name: str):
        return self._fields[name].widget

    def make_estimator(self):
        """A configured, unfitted estimator; ValueError/TypeError explain what to fix.

        Runs the estimator's own parameter checks (the ones ``fit`` starts with) so that a bad
        combination is reported before any work starts.
        """
        cls = self.estimator_class()
        if cls is None:
            raise ValueError(f"{self.method_combo.currentText()} has no estimator for the "
                             f"{self.task} task")
        est = cls(**self.params())
        check = getattr(est, "_validate", None)
        if callable(check):
            try:
                check()
            except (ValueError, TypeError):
                raise
            except Exception as exc:  # an estimator bug must still end as a message
                raise ValueError(f"{cls.__name__} refused these parameters "
                                 f"({type(exc).__name__}: {exc})") from exc
        return est
