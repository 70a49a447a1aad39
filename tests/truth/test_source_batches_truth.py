"""A file source's own log batches are not the query's batches: streamwatch credits each file
to the query batch Spark read it in.

The independent account is Spark's own, on the tests' SparkSession: a windowed count with a
watermark over a file source (every landed file gives a data batch, then a no-data batch —
the source's log gains one batch per file while the query gains two) and a union of two file
sources fed one side at a time; per batch, the rows each source read (the progress event's
``numInputRows``; for the union, the batch's rows per ``input_file_name()``, since Spark's
progress cannot attribute a union's rows when one side is empty) and so the file each source
read. Compared through ``inspect --batches``/``--batch N``, the landing journeys, ``lineage``,
the checkpoint watch's batch input and ``diff``'s batch snapshots
(:mod:`tests.helpers.source_batches`). The same scenario written by Spark 3.5 is committed
under ``tests/fixtures/spark35/`` and checked without a JVM
(``tests/unit/test_source_batches.py``)."""

from __future__ import annotations

import pytest

from tests.helpers.source_batches import assert_scenario_is_telling, check, generator

pytestmark = pytest.mark.spark


def test_files_per_batch_match_spark(spark, tmp_path):
    facts = generator().run_scenario(spark, tmp_path / "run")
    assert_scenario_is_telling(facts)
    check(tmp_path / "run", facts)
