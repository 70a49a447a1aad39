"""streamwatch: watch Spark Structured Streaming queries, their checkpoints and their input.

Three faces share one typed model (:mod:`streamwatch.model`):

* ``streamwatch`` — the Textual dashboard (:mod:`streamwatch.tui`),
* ``streamwatch inspect`` — the read-only checkpoint inspector (:mod:`streamwatch.checkpoint`),
* headless listener logging (:mod:`streamwatch.events`).

Importing this package imports neither pyspark nor textual.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what `streamwatch.record` is, for a type checker; loaded lazily below
    from streamwatch.spark.record import record as record

__version__ = "0.1.0"

__all__ = ["__version__", "record"]


def __getattr__(name: str) -> object:
    """``streamwatch.record`` is loaded on first use (it imports pyspark)."""
    if name == "record":
        from streamwatch.spark.record import record

        return record
    raise AttributeError(f"module 'streamwatch' has no attribute {name!r}")
