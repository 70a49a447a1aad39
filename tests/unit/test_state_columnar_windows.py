"""Windows (structs of fixed-width fields) that repeat across many rows, as an aggregation's
keys hold them: the column-wise decoder (which decodes each distinct window once) gives every
row the window written into it — null windows, null ends and a broken nested row among them
— as the values written (the account) and the per-row decoder read them."""

from __future__ import annotations

import struct

from streamwatch.state.columnar import compile_batch
from streamwatch.state.unsaferow import compile_row
from tests.unit.test_state_columnar import _schema_of, expected, write_row


def test_repeated_windows_decode_to_the_window_of_each_row():
    kinds = ["w", "s", "long"]
    wins = [(0, 600_000_000), (600_000_000, 1_200_000_000), (0, None), None, (-5, 7)]
    rows = [[wins[i * 7 % len(wins)], f"key-{i}", i] for i in range(2000)]
    blobs = [write_row(kinds, r) for r in rows]
    broken = bytearray(blobs[10])
    broken[8:16] = struct.pack("<Q", 32 << 32 | 8)  # a window of 8 bytes (needs 24)
    blobs[10] = bytes(broken)
    sch = _schema_of(kinds)
    cols, ok = compile_batch(sch, versioned=False)(blobs)
    assert ok.tolist() == [i != 10 for i in range(2000)]
    per_row = compile_row(sch)
    for i, r in enumerate(rows):
        if i == 10:
            continue
        want = tuple(expected(k, v) for k, v in zip(kinds, r, strict=True))
        got = tuple(c[i] for c in cols)
        assert got == want == per_row(blobs[i], 0, len(blobs[i])), (i, got, want)
