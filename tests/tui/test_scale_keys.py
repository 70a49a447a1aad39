"""Issue 18 (a hundred queries): enter on the queries table is the app's own priority binding,
answered as the app reads the key — unless keys typed before it (an arrow) are still queued
for the table: then it takes its turn, so a burst "down, enter" opens the query below."""

from __future__ import annotations

from textual import events
from textual.widgets import TabPane

from streamwatch.tui.views.queries import QueriesView

from conftest import drawn, run_app, wait_for


def post(app, *keys: str) -> None:
    """Keys in one burst, as the terminal driver posts them (no waiting in between)."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


def test_enter_opens_the_highlighted_query(make_app):
    app = make_app()
    seen: list[tuple[str, str | None]] = []

    async def scenario(pilot):
        table = app.query_one("#query-table", QueriesView)
        for key in ("down", "down"):
            post(app, key, "enter")
            await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
            await drawn(pilot, app)
            seen.append((app.active_tab, app.selected))
            post(app, "1")
            await wait_for(pilot, lambda: app.active_tab == "queries" and app.focused is table, "the queries tab")
            await drawn(pilot, app)

    run_app(app, scenario)
    assert seen == [("detail", "flights_silver"), ("detail", "flights_gold")]


def test_enter_elsewhere_is_the_focused_widgets_key(make_app):
    app = make_app()

    async def scenario(pilot):
        post(app, "colon", "p", "a", "u", "s", "e", "enter")  # enter submits the command line
        await wait_for(pilot, lambda: app.paused, "the pause command")
        await drawn(pilot, app)
        assert app.active_tab == "queries"

    run_app(app, scenario)


def test_late_news_of_a_focus_given_before_a_tab_switch_does_not_switch_back(make_app):
    """The race behind a fast enter, made deterministic: the queries pane's ``Focused`` news
    arrives after enter switched to the detail tab (the focus has not moved since): ignored.
    A focus that moved into another pane after the switch still activates that pane."""
    app = make_app()

    async def scenario(pilot):
        queries = app.query_one("#queries", TabPane)
        post(app, "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        await drawn(pilot, app)
        queries.post_message(TabPane.Focused(queries))  # the late news
        await drawn(pilot, app)
        assert app.active_tab == "detail"
        app.query_one("#cp-batches").focus()  # a real focus move into the checkpoint pane
        await wait_for(pilot, lambda: app.active_tab == "checkpoint", "the checkpoint tab")

    run_app(app, scenario)


def test_footer_is_rebuilt_only_when_the_keys_it_shows_change(make_app):
    """A tab switch moves the focus but leaves the shown keys: the footer keeps its widgets
    (no rebuild, no full-screen layout). Opening the ``/`` line hides ``/`` and ``:`` (plain
    characters there): the footer is rebuilt without them, and again with them on escape."""
    from streamwatch.tui.footer import SteadyFooter

    app = make_app()

    async def scenario(pilot):
        footer = app.query_one(SteadyFooter)
        table = app.query_one("#query-table", QueriesView)

        def shown() -> list[str]:
            return [str(getattr(k, "key", "")) for k in footer.children]

        before = list(footer.children)
        assert "slash" in shown() and "colon" in shown()
        post(app, "3")
        await wait_for(pilot, lambda: app.focused is app.query_one("#cp-batches"), "the checkpoint tab's focus")
        await drawn(pilot, app)
        assert list(footer.children) == before  # the very same key widgets
        post(app, "1")
        await wait_for(pilot, lambda: app.focused is table, "the queries tab's focus")
        await drawn(pilot, app)
        assert list(footer.children) == before
        post(app, "slash")
        await wait_for(pilot, lambda: "slash" not in shown(), "the footer without /")
        assert "colon" not in shown()
        post(app, "escape")
        await wait_for(pilot, lambda: "slash" in shown() and app.focused is table, "the footer with / again")
        await drawn(pilot, app)

    run_app(app, scenario)


def test_detail_charts_are_built_one_per_paint_and_all_of_them(make_app):
    """enter shows the query's text and tables first, its charts follow one per paint (no
    paint builds two plots); once the screen settles every visible chart is built for the
    newly shown query and none is left waiting — for the second query opened too."""
    from streamwatch.tui.charts import ChartPlot
    from streamwatch.tui.views.detail import DetailView

    app = make_app()

    async def scenario(pilot):
        detail = app.query_one(DetailView)
        for key, name in (("down", "flights_silver"), ("down", "flights_gold")):
            post(app, "1")
            await wait_for(pilot, lambda: app.active_tab == "queries", "the queries tab")
            await drawn(pilot, app)
            post(app, key, "enter")
            await wait_for(pilot, lambda name=name: detail.shown == name and app.active_tab == "detail", f"{name}'s detail")
            await drawn(pilot, app)
            assert not detail.charts_pending
            plots = [p for p in detail.query(ChartPlot) if p.region.height]  # laid out on screen
            assert plots
            for plot in plots:
                assert not plot.pending and not plot.blank  # built for this query

    run_app(app, scenario, size=(120, 60))


def test_a_chart_hidden_while_it_waited_for_its_build_is_not_pending(make_app):
    """A chart can be hidden (its query no longer has a watermark in the samples that fit,
    say) between the paint that deferred its plot and the one that would build it; hidden,
    it is never painted, so it waits for nothing: the detail's charts are not pending (the
    benchmark waits for that after enter, and waited forever in a 30-minute soak). Shown
    again, it is built."""
    from streamwatch.tui.charts import Chart, ChartPlot
    from streamwatch.tui.views.detail import DetailView

    app = make_app()
    steps: list[object] = []

    async def scenario(pilot):
        detail = app.query_one(DetailView)
        post(app, "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        await drawn(pilot, app)
        chart = app.query_one("#chart-rates", Chart)
        plot = chart.query_one(ChartPlot)
        plot.pending = True  # as a deferred paint leaves it: waiting, its refresh queued
        plot.call_after_refresh(plot.refresh)
        chart.display = False  # hidden before the paint that would build it
        await drawn(pilot, app)
        steps.append((chart.pending, detail.charts_pending))
        chart.display = True
        await drawn(pilot, app)
        await wait_for(pilot, lambda: not detail.charts_pending, "the chart built again")
        steps.append((plot.pending, plot.blank))

    run_app(app, scenario, size=(120, 60))
    assert steps == [(False, False), (False, False)]


def test_the_command_line_takes_the_status_lines_place(make_app):
    """``/`` and ``:`` open their line where the status line was, so the queries table keeps
    its size (its lines are not drawn again); esc gives the status line back."""
    app = make_app()
    seen: list[tuple[object, bool, bool, int]] = []

    async def scenario(pilot):
        table = app.query_one("#query-table", QueriesView)
        line, status = app.query_one("#cmdline"), app.query_one("#status")

        def look() -> None:
            seen.append((table.size, line.display, status.display, status.region.y if status.display else line.region.y))

        await drawn(pilot, app)
        look()
        for opener in ("slash", "colon"):
            post(app, opener)
            await wait_for(pilot, lambda: line.display and app.focused is line, "the line")
            await drawn(pilot, app)
            look()
            post(app, "escape")
            await wait_for(pilot, lambda: not line.display and app.focused is table, "the line closed")
            await drawn(pilot, app)
            look()

    run_app(app, scenario)
    size, _, _, y = seen[0]
    assert seen == [(size, False, True, y), (size, True, False, y), (size, False, True, y),
                    (size, True, False, y), (size, False, True, y)]


def test_the_paint_bringing_the_detail_tab_on_screen_builds_no_chart(make_app):
    """Coming back to a query's detail tab, its charts show what they showed in the paint
    that brings the tab on screen (which answers the key), and are built in the paints after,
    one each."""
    import dataclasses

    from streamwatch.tui.charts import ChartPlot
    from streamwatch.tui.views.detail import DetailView

    app = make_app()
    seen: dict[str, object] = {}

    async def scenario(pilot):
        detail = app.query_one(DetailView)
        post(app, "down", "enter")
        await wait_for(pilot, lambda: detail.shown == "flights_silver", "the detail tab")
        await drawn(pilot, app)
        plots = [p for p in detail.query(ChartPlot) if p.region.height]
        post(app, "1")
        await wait_for(pilot, lambda: app.active_tab == "queries", "the queries tab")
        last = app.board.rows["flights_silver"].last_progress
        app.emit(dataclasses.replace(last, batch_id=last.batch_id + 1))  # its charts change meanwhile
        await drawn(pilot, app)
        builds: list[ChartPlot] = []
        renders: list[tuple[ChartPlot, int, bool]] = []  # (plot, builds before it, built by it)
        for plot in plots:
            def counting(plt, width, height, plot=plot, draw=plot._draw):
                builds.append(plot)
                draw(plt, width, height)

            def render(plot=plot, render=plot.render):
                n = len(builds)
                out = render()
                renders.append((plot, n, len(builds) > n))
                return out
            plot._draw = counting
            plot.render = render
        app.action_tab("detail")  # what enter and "2" do
        await drawn(pilot, app)
        first = {}
        for plot, n, built in renders:
            first.setdefault(plot, (n, built))
        seen.update(plots=plots, first=[first.get(p) for p in plots], built=builds,
                    after=[p.pending or p.blank for p in plots])

    run_app(app, scenario, size=(120, 60))
    plots = seen["plots"]
    assert plots
    assert seen["first"] == [(0, False)] * len(plots)  # each first drawn (the tab's paint) with no plot built
    assert sorted(map(id, seen["built"])) == sorted(map(id, plots))  # then each built once
    assert not any(seen["after"])


def test_the_tab_enter_brings_on_screen_is_drawn_for_the_query_it_opens(make_app):
    """Opening a query draws the detail tab for it before the tab is shown, so the paint that
    brings the tab on screen shows that query: the redraw on ``TabActivated`` comes through two
    message queues, and until then the tab showed the query opened last time."""
    from streamwatch.tui.views.detail import DetailView

    app = make_app()
    seen: list[tuple[str | None, str]] = []

    async def scenario(pilot):
        detail = app.query_one(DetailView)
        table = app.query_one("#query-table", QueriesView)
        app.open_query("flights_bronze")
        await wait_for(pilot, lambda: detail.shown == "flights_bronze", "the detail tab")
        await drawn(pilot, app)
        post(app, "1")
        await wait_for(pilot, lambda: app.active_tab == "queries" and app.focused is table, "the queries tab")
        await drawn(pilot, app)
        app.open_query("flights_gold")  # what enter on its row does
        seen.append((detail.shown, app.active_tab))  # before any message was processed or paint ran
        await drawn(pilot, app)

    run_app(app, scenario)
    assert seen == [("flights_gold", "detail")]


def test_the_tables_own_enter_opens_the_query_at_once(make_app):
    """enter reaching the table (the app's binding gave way to keys queued before it) opens
    the query as the key is handled: no ``RowSelected`` message waits in the table's queue."""
    from streamwatch.tui.views.detail import DetailView

    app = make_app()
    seen: list[tuple[str, str | None, str | None]] = []

    async def scenario(pilot):
        table = app.query_one("#query-table", QueriesView)
        await drawn(pilot, app)
        table.move_cursor(row=2, animate=False)
        table.action_select_cursor()  # what DataTable's enter binding calls
        seen.append((app.active_tab, app.selected, app.query_one(DetailView).shown))
        await drawn(pilot, app)

    run_app(app, scenario)
    assert seen == [("detail", "flights_gold", "flights_gold")]
