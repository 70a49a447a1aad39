"""Benchmark: ``streamwatch inspect --recursive ROOT`` over a fleet of checkpoints.

Synthesizes ``--count`` (default 200) checkpoints the size of the bundled pipelines' (30
batches, a file-source log compacted every 10, one stateful operator × 4 shuffle partitions
on the HDFS store, state of every version kept — what `make run` leaves after a few
minutes), spread over ``<root>/team-N/checkpoints/<pipeline>/<layer>``. In ``--rounds``
alternated rounds, each a fresh process, times:

* ``streamwatch inspect --recursive ROOT --json`` (one process, every checkpoint);
* the named alternative, a shell loop: one ``streamwatch inspect CP --json`` per checkpoint
  (what a team does without ``--recursive``), timed over ``--loop-sample`` checkpoints and
  scaled to the fleet.

Target (issue 18): 200 checkpoints ≤ 2 s locally.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.inspect_bench import Shape, synthesize  # noqa: E402
from bench.installed import installed_env, warm  # noqa: E402

PIPELINE = Shape("pipeline", batches=30, retained=30, files_per_batch=1, compact=10, operators=1, partitions=4,
                 versions=30, snapshot_every=10, delta_bytes=256)
LAYERS = [("flights", "bronze"), ("flights", "silver"), ("flights", "gold"), ("orders", "bronze"), ("orders", "gold")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loop-sample", type=int, default=20)
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("streamwatch"))
    with tempfile.TemporaryDirectory(prefix="sw-fleet-bench-") as tmp:
        root = Path(tmp) / "fleet"
        t = time.perf_counter()
        cps = []
        for i in range(args.count):
            pipeline, layer = LAYERS[i % len(LAYERS)]
            cp = root / f"team-{i // len(LAYERS)}" / "checkpoints" / pipeline / layer
            synthesize(cp, PIPELINE)
            cps.append(cp)
        files = sum(1 for p in root.rglob("*") if p.is_file())
        print(f"synthesized {args.count} checkpoints ({files:,} files) in {time.perf_counter() - t:.1f} s")
        env = installed_env(Path(tmp) / "pycache")  # bytecode cached, as a pip install leaves it
        warm([exe, "inspect", "--recursive", str(root), "--json"], env)
        fleet, loop = [], []
        for i in range(args.rounds):
            t = time.perf_counter()
            r = subprocess.run([exe, "inspect", "--recursive", str(root), "--json"], capture_output=True, check=True, env=env)
            fleet.append(time.perf_counter() - t)
            assert r.stdout.count(b'"path"') == args.count
            t = time.perf_counter()
            for cp in cps[: args.loop_sample]:
                subprocess.run([exe, "inspect", str(cp), "--json"], capture_output=True, check=True, env=env)
            loop.append((time.perf_counter() - t) * args.count / args.loop_sample)
            print(f"round {i + 1}/{args.rounds}: --recursive {fleet[-1]:.2f} s, loop (scaled) {loop[-1]:.1f} s", flush=True)
    med = statistics.median(fleet)
    print(f"inspect --recursive ({args.count} checkpoints)  median {med:6.2f} s  min {min(fleet):6.2f} s   target ≤ 2.00 s  {'OK' if med <= 2 else 'MISSED'}")
    print(f"loop of inspect per checkpoint (scaled)    median {statistics.median(loop):6.2f} s  min {min(loop):6.2f} s")
    print(f"ratio loop / --recursive: {statistics.median(loop) / med:.1f}× (median)  {min(loop) / min(fleet):.1f}× (min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
