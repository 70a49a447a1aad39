"""The pipeline tab's model and drawing without Spark: columns from the DAG (fan-in,
fan-out, an edge skipping a column), backlog and the slowest mark in the drawn text."""

from __future__ import annotations

from streamwatch.analysis.pipeview import Layer, Link, PipelineGraph, layout
from streamwatch.tui.views.pipeline import draw_graph, short_names


def test_layout_columns_follow_the_longest_path_and_cycles_are_cut():
    names = ["a", "b", "c", "d", "e"]
    pos = layout(names, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("a", "d"), ("d", "e"), ("e", "a")])
    assert {n: p[0] for n, p in pos.items()} == {"a": 0, "b": 1, "c": 1, "d": 2, "e": 3}
    assert pos["b"][1] != pos["c"][1]


def _graph() -> PipelineGraph:
    pairs = [("p_bronze", "p_silver"), ("p_bronze", "p_quarantine"), ("p_silver", "p_gold"),
             ("p_dims", "p_gold"), ("p_bronze", "p_gold")]
    names = ["p_bronze", "p_dims", "p_silver", "p_quarantine", "p_gold"]
    pos = layout(names, pairs)
    layers = tuple(sorted((Layer(n, *pos[n], batch_id=3, status="active", layer_latency_ms=900,
                                 slowest=n == "p_gold", end_to_end_ms=4200 if n == "p_gold" else None) for n in names),
                          key=lambda lay: (lay.column, lay.row)))
    links = tuple(Link(u, d, backlog_files=2 if d == "p_silver" else 0, backlog_bytes=3072 if d == "p_silver" else 0)
                  for u, d in pairs)
    return PipelineGraph(layers, links, "p_gold", 4200, 0)


def test_drawing_shows_every_layer_edge_backlog_and_the_slowest():
    text = draw_graph(_graph(), 140)
    drawn = text.plain
    assert short_names(["p_bronze", "p_gold"]) == {"p_bronze": "bronze", "p_gold": "gold"}
    for name in ("p_bronze", "p_dims", "p_silver", "p_quarantine", "p_gold"):
        assert f" {name} " in drawn
    assert "← bronze: 2 file(s) 3.0 KiB" in drawn  # silver's backlog
    assert "← dims: 0 file(s) 0 B" in drawn and "← silver: 0 file(s) 0 B" in drawn  # fan-in on gold
    assert "p_gold ◆ slowest" in drawn and "e2e 4.2 s" in drawn
    assert drawn.count("▶") == 3  # silver, quarantine, and gold (its three inputs join before one arrow)
    assert any(span.style == "yellow" for span in text.spans)  # the edge with a backlog
    assert max(len(line) for line in drawn.splitlines()) <= 140
