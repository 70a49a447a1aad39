"""The key footer lets go of the keys it removes. Textual's Footer rebuilds its keys whenever
the shown bindings change (the ``/`` line opening and closing changes them), and each removed
key stayed referenced from the footer's ``compact`` watcher list (textual#6666): ~10 widgets a
change, so a dashboard used for hours kept growing (issue 18: flat RSS)."""

from __future__ import annotations

import gc

from conftest import run_app, wait_for


def footer_keys() -> list[object]:
    gc.collect()
    return [o for o in gc.get_objects() if type(o).__name__ == "FooterKey"]


def test_the_footer_keeps_only_the_keys_it_shows(make_app):
    app = make_app()

    async def scenario(pilot):
        footer = app.dashboard.query_one("SteadyFooter")
        line = app.dashboard.query_one("#cmdline")
        rebuilds = 0
        for _ in range(25):  # each open and close of the / line shows other keys: two rebuilds
            for key, shown in (("slash", True), ("escape", False)):
                before = footer.children[:1]
                await pilot.press(key)
                await wait_for(pilot, lambda shown=shown, before=before: bool(line.display) is shown and footer.children[:1] != before
                               and all(k.is_attached for k in footer.children), f"the footer rebuilt after {key}")
                rebuilds += 1
        shown = len(footer.query("FooterKey"))
        assert rebuilds == 50 and shown > 3
        alive = footer_keys()
        # the keys shown now, and the previous rebuild's keys until the next rebuild lets go of them
        assert len(alive) <= 2 * shown, f"{len(alive)} FooterKey widgets alive after {rebuilds} rebuilds, {shown} shown"

    run_app(app, scenario)
