"""The pipeline tab shows the landing backlog the landing tab counts: the first layer's box
says how many landed files it has not read, the same number as the landing view's backlog
(files landed, no batch has read them), so the two tabs never disagree."""

from __future__ import annotations

from test_small_screens import flights_graph, press_until, screen_text

from streamwatch.tui.views.pipeline import box_lines

from conftest import drawn, landed_files, run_app, wait_for


def test_box_line_names_the_unread_landed_files():
    g = flights_graph()
    bronze = g.layer("flights_bronze")
    assert not any("landing" in t for t, _ in box_lines(bronze, [], {}))
    from dataclasses import replace

    lines = box_lines(replace(bronze, landing_unread=7), [], {})
    assert ("← landing: 7 file(s) unread", "yellow") in lines


def test_pipeline_tab_and_landing_tab_agree(make_app, tmp_path):
    app = make_app()

    async def scenario(pilot):
        for f in landed_files(tmp_path, 6):
            app.emit(f)
        app.emit(flights_graph())
        await wait_for(pilot, lambda: app.model.pipeline is not None and app.model.landed_count >= 6, "graph, files")
        backlog = app.model.query_backlog()
        unread = backlog.get("flights_bronze")
        assert unread is not None
        await pilot.press("7")
        await drawn(pilot, app)
        await press_until(pilot, app, "pagedown", lambda text: f"← landing: {unread} file(s) unread" in text,
                          "bronze's landing backlog")
        assert f"← landing: {unread}" in screen_text(app)

    run_app(app, scenario, size=(160, 48))
