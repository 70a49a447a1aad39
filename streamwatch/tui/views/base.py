"""What every tab's view shares: it is given the model (``show(model)``) and draws itself from
it; a filtered view also redraws when its ``/`` filter text (``needle``) changes.

Mixed in before the Textual widget a view is (``class QueriesView(FilteredView, SyncTable)``):
Textual collects the ``reactive`` attributes along the whole class hierarchy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.reactive import reactive

from streamwatch.analysis.dashboard import DashboardModel

if TYPE_CHECKING:  # a view is always mixed into a widget: its reactives are a widget's
    from textual.widget import Widget as _Mixin
else:
    _Mixin = object


class ModelView(_Mixin):
    """A view of the :class:`~streamwatch.analysis.dashboard.DashboardModel`: ``show(model)``
    sets the ``model`` reactive, whose watcher calls :meth:`draw` (every time it is set, even
    with the same model object: the model changes in place)."""

    model: reactive[DashboardModel | None] = reactive(None, always_update=True, repaint=False, init=False)

    def show(self, model: DashboardModel) -> None:
        self.model = model

    def watch_model(self) -> None:
        if self.model is not None:
            self.draw(self.model)

    def draw(self, model: DashboardModel) -> None:  # pragma: no cover - every view overrides it
        raise NotImplementedError


class FilteredView(ModelView):
    """A :class:`ModelView` the ``/`` line filters: setting ``needle`` (the filter text, ``""``
    for none) redraws it."""

    needle: reactive[str] = reactive("", repaint=False, init=False)

    def watch_needle(self) -> None:
        self.watch_model()
