"""``bench/inspect_bench.py --s3``: the production-shaped checkpoint on a loopback S3 server
(moto's app behind a request counter, tests/helpers/s3_counting.py): uploads it, then times
``streamwatch inspect s3://…`` (summary, in-process so the server's count is this read's)
over alternated rounds and prints the requests it issued by kind (target < 1,000: listings
per folder, never a request per file) and the most requests the server had in flight at
once (concurrent listings)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def bench_s3(shape, synthesize, rounds: int) -> None:
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.checkpoint.jsonout import summary_doc
    from tests.helpers.s3_counting import counting_s3

    with tempfile.TemporaryDirectory(prefix="sw-inspect-s3-") as tmp, counting_s3("bench") as s3:
        local = Path(tmp) / "cp"
        files = synthesize(local, shape)
        t = time.perf_counter()
        paths = [p for p in local.rglob("*") if p.is_file()]

        def put(p: Path) -> None:
            s3.client.put_object(Bucket="bench", Key=f"cp/{p.relative_to(local).as_posix()}", Body=p.read_bytes())

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(put, paths))
        print(f"[s3] uploaded {files:,} files to the loopback S3 server in {time.perf_counter() - t:.1f} s")
        times, counts, peaks = [], [], []
        for _ in range(rounds):
            s3.log.reset()
            t = time.perf_counter()
            doc = summary_doc(read_checkpoint("s3://bench/cp", full=False))
            times.append(time.perf_counter() - t)
            counts.append(s3.log.snapshot())
            peaks.append(s3.log.max_in_flight)
            assert doc["batches"]["latest"] == shape.batches - 1 and len(doc["state"]) == shape.operators
        total = sum(counts[-1].values())
        print(f"[s3] inspect s3://… summary  median {statistics.median(times):.2f} s  min {min(times):.2f} s  "
              f"requests {total} {counts[-1]}  (one per file would be {files:,})  target < 1,000  {'OK' if total < 1000 else 'MISSED'}")
        print(f"[s3] most requests in flight at once: {max(peaks)} (listings run concurrently)")
