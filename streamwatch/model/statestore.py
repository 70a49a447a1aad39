"""A checkpoint's state, as read from disk: ``state/<operatorId>/<partition>[/<store>]``
folders (HDFS-backed: ``N.delta``/``N.snapshot``; RocksDB: ``N.zip``/``N.changelog`` and
``SSTs/``) and the operator metadata (``_metadata/metadata`` v1, ``_metadata/v2/N`` v2, mirrors
``OperatorStateMetadataV1/V2``), including transformWithState state variables.

State store version ``v`` holds the state after batch ``v - 1``. Sizes are bytes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StateStoreInfo:
    """One store of a state operator as recorded in operator metadata (mirrors
    ``StateStoreMetadataV1/V2``): ``name`` (``default``, or e.g. ``left-keyToNumValues``),
    ``num_partitions``, ``num_cols_prefix_key``, ``schema_path`` (v2: the newest of its
    ``stateSchemaFilePaths``)."""

    name: str
    num_partitions: int | None = None
    num_cols_prefix_key: int | None = None
    schema_path: str | None = None


@dataclass(frozen=True, slots=True)
class StateVariable:
    """A transformWithState state variable (``stateName``, ``stateVariableType``, ttl)."""

    name: str
    kind: str
    ttl_enabled: bool = False


@dataclass(frozen=True, slots=True)
class StatePartition:
    """One state store folder ``state/<op>/<partition>[/<store>]``: ``versions`` present
    (sorted; version v = state after batch v-1), ``snapshot_versions`` (HDFS ``.snapshot``
    or RocksDB ``.zip``), file count and ``bytes`` (including ``SSTs/``; None when the read
    did not measure sizes). ``unique_ids``: (version, unique id) of every checkpoint-format-v2
    file (``V_<uniqueId>.zip``/``.changelog``), sorted."""

    partition_id: int
    store_name: str
    versions: tuple[int, ...] = ()
    snapshot_versions: tuple[int, ...] = ()
    files: int = 0
    bytes: int | None = 0
    unique_ids: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class StateOperator:
    """``state/<operator_id>/``: ``name`` (e.g. ``stateStoreSave``, ``symmetricHashJoin``,
    ``dedupe``, ``transformWithStateExec``; None without operator metadata, except a
    stream-stream join, known by its ``left-…``/``right-…`` store folders),
    ``metadata_version`` (1 for ``_metadata/metadata``, 2 for ``_metadata/v2/N``),
    ``provider`` (``"hdfs"``, ``"rocksdb"`` or ``"unknown"``, from the files), ``stores``
    from the metadata, ``partitions`` (one row per partition and store), ``schema_files``
    (paths relative to the operator folder), transformWithState ``state_variables``,
    ``time_mode`` and ``output_mode``, ``bytes`` (total; None when sizes were not measured)."""

    operator_id: int
    path: str
    name: str | None = None
    metadata_version: int | None = None
    provider: str = "unknown"
    stores: tuple[StateStoreInfo, ...] = ()
    partitions: tuple[StatePartition, ...] = ()
    schema_files: tuple[str, ...] = ()
    state_variables: tuple[StateVariable, ...] = ()
    time_mode: str | None = None
    output_mode: str | None = None
    bytes: int | None = 0

    @property
    def num_partitions(self) -> int:
        ids = {p.partition_id for p in self.partitions}
        if ids:
            return len(ids)
        return max((s.num_partitions or 0 for s in self.stores), default=0)

    @property
    def store_names(self) -> tuple[str, ...]:
        names = {p.store_name for p in self.partitions} | {s.name for s in self.stores}
        return tuple(sorted(names))

    @property
    def versions(self) -> tuple[int, ...]:
        """Versions present in every partition folder (sorted)."""
        if not self.partitions:
            return ()
        common = set(self.partitions[0].versions)
        for p in self.partitions[1:]:
            common &= set(p.versions)
        return tuple(sorted(common))

    @property
    def any_versions(self) -> tuple[int, ...]:
        """Versions present in at least one partition folder (sorted)."""
        out: set[int] = set()
        for p in self.partitions:
            out.update(p.versions)
        return tuple(sorted(out))
