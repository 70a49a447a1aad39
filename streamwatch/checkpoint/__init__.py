"""Read-only checkpoint reader. Imports neither pyspark nor textual."""

from streamwatch.checkpoint.reader import CheckpointError, read_checkpoint

__all__ = ["CheckpointError", "read_checkpoint"]
