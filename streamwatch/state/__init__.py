"""State-store decoding without a JVM: the rows in a checkpoint's HDFS-backed and RocksDB
state stores (UnsafeRow), their schemas, and the growth/eviction audit.

Entry points: :func:`read_state` (rows of a batch, per operator/store/partition) and
:func:`streamwatch.state.audit.audit_state` (bounded vs growing state). UI-free: imports
neither pyspark nor textual.
"""

from streamwatch.state.model import Column, PartitionSize, StateReadError, StateTable
from streamwatch.state.reader import default_stores, read_state

__all__ = ["Column", "PartitionSize", "StateReadError", "StateTable", "default_stores", "read_state"]
