"""Queries for tests/ops/test_ops_cli_codes.py: FUNCTION(spark) returns a configured, not
started DataStreamWriter (``streamwatch compat/recover --query``)."""

from __future__ import annotations


def foreach_batch(spark):
    """A rate source written by a foreachBatch function: its output cannot be copied."""
    return spark.readStream.format("rate").load().writeStream.foreachBatch(lambda df, batch_id: None)
