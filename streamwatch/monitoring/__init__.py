"""Monitoring files shipped with streamwatch for the gauges of ``streamwatch watch --log
--prometheus PORT`` (:mod:`streamwatch.watch_metrics`): ``alerts.yml`` (Prometheus alert
rules) and ``grafana.json`` (a Grafana dashboard). Find them with :func:`path`."""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

#: The shipped files.
NAMES = ("alerts.yml", "grafana.json")


def path(name: str) -> Traversable:
    """The shipped file ``name`` (one of :data:`NAMES`); raises ``ValueError`` for another name."""
    if name not in NAMES:
        raise ValueError(f"no shipped monitoring file {name!r} (there are: {', '.join(NAMES)})")
    return files(__name__).joinpath(name)
