"""Benchmark: requests per checkpoint read on Azure Blob Storage, Google Cloud Storage and S3 —
they must grow with the checkpoint's folders, not with its files.

Three synthetic checkpoints (bench/inspect_bench.py's writer; HDFS state stores):

* ``base``        — 2 operators × 4 partitions, 10 versions a partition;
* ``4x files``    — the same folders, 40 versions a partition (4× the state files);
* ``2x folders``  — 2 operators × 8 partitions, 10 versions (2× the partition folders).

Each is uploaded to every store there is — Azurite (``abfss://…``, through adlfs), the
gcp-storage-emulator (``gs://…``, gcsfs) and moto (``s3://…``, s3fs) on loopback — and read
as ``streamwatch inspect`` reads it (a summary, in-process, ``--rounds`` times) with a proxy
(for S3: moto's own app behind a counter) counting every request on the wire. Prints per store
and checkpoint the files, the partition folders and the requests by kind (list / get / head),
the median read time, and whether 4× the files cost no more requests (target: the same) while
2× the folders cost more listings. A store whose server cannot run here (no node/npm for
Azurite) is skipped, saying why.

    python bench/cloud_listing_bench.py [--stores azure,gcs,s3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.inspect_bench import Shape, synthesize  # noqa: E402

SHAPES = [
    Shape("base", batches=200, retained=20, files_per_batch=2, compact=10, operators=2, partitions=4,
          versions=10, snapshot_every=10, delta_bytes=64),
    Shape("4x files", batches=200, retained=20, files_per_batch=2, compact=10, operators=2, partitions=4,
          versions=40, snapshot_every=10, delta_bytes=64),
    Shape("2x folders", batches=200, retained=20, files_per_batch=2, compact=10, operators=2, partitions=8,
          versions=10, snapshot_every=10, delta_bytes=64),
]
BUCKET = "bench"

#: A store under test: (URL of a prefix, a callable returning and clearing the request kinds
#: counted since its last call, storage_options for the reader).
Opened = tuple[Callable[[str], str], Callable[[], dict[str, int]], dict[str, Any]]


@contextlib.contextmanager
def _emulated(store: str, trees: dict[str, Path]) -> Iterator[Opened]:
    """``store`` ``azure`` (Azurite) or ``gcs`` (the GCS emulator), started, with ``trees``
    uploaded under :data:`BUCKET` and a counting proxy in front."""
    from tests.helpers.azurite import azurite
    from tests.helpers.cloud import count_kinds, counted_store, store_url
    from tests.helpers.gcs_emulator import gcs_emulator

    with (azurite() if store == "azure" else gcs_emulator()) as server:
        if store == "azure":
            server.create_container(BUCKET)
        else:
            server.create_bucket(BUCKET)
        for name, tree in trees.items():
            server.upload(tree, BUCKET, name)
        with counted_store(store, server) as (proxy, options):
            yield (lambda key: store_url(store, BUCKET, key)), (lambda: count_kinds(store, proxy.take())), options


@contextlib.contextmanager
def _s3(trees: dict[str, Path]) -> Iterator[Opened]:
    from concurrent.futures import ThreadPoolExecutor

    from tests.helpers.s3_counting import counting_s3

    with counting_s3(BUCKET) as s3:
        puts = [(f"{name}/{p.relative_to(tree).as_posix()}", p) for name, tree in trees.items()
                for p in tree.rglob("*") if p.is_file()]
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda kp: s3.client.put_object(Bucket=BUCKET, Key=kp[0], Body=kp[1].read_bytes()), puts))

        def take() -> dict[str, int]:
            kinds = s3.log.snapshot()
            s3.log.reset()
            return kinds

        yield (lambda key: f"s3://{BUCKET}/{key}"), take, {}


STORES = {"azure": functools.partial(_emulated, "azure"), "gcs": functools.partial(_emulated, "gcs"), "s3": _s3}


def _key(shape: Shape) -> str:
    return shape.name.replace(" ", "-")


def bench(store: str, trees: dict[str, Path], files: dict[str, int], rounds: int) -> None:
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.checkpoint.jsonout import summary_doc

    t = time.perf_counter()
    with contextlib.ExitStack() as stack:
        try:
            url, take, options = stack.enter_context(STORES[store](trees))
        except Exception as e:  # noqa: BLE001 - a server that cannot run here: say why, go on
            print(f"[{store}] skipped: {e}")
            return
        print(f"[{store}] uploaded {sum(files.values()):,} files in {time.perf_counter() - t:.1f} s")
        totals = {}
        for shape in SHAPES:
            times, counts = [], {}
            for _ in range(rounds):
                take()
                t = time.perf_counter()
                doc = summary_doc(read_checkpoint(url(_key(shape)), full=False, sizes=False, storage_options=options))
                times.append(time.perf_counter() - t)
                counts = take()
                assert doc["batches"]["latest"] == shape.batches - 1 and len(doc["state"]) == shape.operators
            total = sum(counts.values())
            totals[shape.name] = total
            folders = shape.operators * shape.partitions
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            print(f"[{store}] {shape.name:<11} {files[shape.name]:>5,} files, {folders:>2} partition folders: "
                  f"{total:>3} requests ({kinds}); one per file would be {files[shape.name]:,}; "
                  f"median {statistics.median(times):.2f} s")
        same = totals["4x files"] == totals["base"]
        grew = totals["2x folders"] > totals["base"]
        print(f"[{store}] 4x files: {totals['4x files'] - totals['base']:+d} requests (target +0) "
              f"{'OK' if same else 'MISSED'}; 2x folders: {totals['2x folders'] - totals['base']:+d} "
              f"(one listing per new partition folder) {'OK' if grew else 'MISSED'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", default="azure,gcs,s3", help="comma-separated: azure, gcs, s3")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sw-cloud-bench-") as tmp:
        trees, files = {}, {}
        for shape in SHAPES:
            tree = Path(tmp) / _key(shape)
            files[shape.name] = synthesize(tree, shape)
            trees[_key(shape)] = tree
        for store in args.stores.split(","):
            bench(store.strip(), trees, files, args.rounds)


if __name__ == "__main__":
    main()
