"""Synthetic e-commerce orders as multiline JSON files (a JSON array of pretty-printed orders
per file, ``orders_000001.json``), deterministic for a ``seed``.

Each order: ``order_id``, ``timestamp`` (ISO 8601, UTC), ``customer{customer_id, name, email,
address{city, postal_code, country}}``, ``items[{item_id, product_name, quantity, price}]``
(sometimes empty), ``payment{method, transaction_id}``, ``metadata[{key, value}]`` (sometimes
null). Every file covers ``minutes_per_file`` minutes of order time.

* ``dup_ratio`` — that fraction of the previous file's orders is sent again (same order id and
  content): the silver layer's ``dropDuplicatesWithinWatermark`` removes them.
* ``bad_ratio`` — that fraction of orders is landed malformed, each in its own file
  (``orders_000007_bad_01.json``: truncated JSON or a text where a number belongs), because a
  multiline JSON file that fails to parse becomes one ``_corrupt_record`` row. Those files
  count among the files asked for: ``land(3)`` lands 3 files, malformed or not.

The source uses ``cleanSource=archive``, so processed files leave the landing directory; the
next file number is kept in ``.orders-state.json`` (hidden from Spark's file source).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# numpy is imported where orders are made: reading the pipeline's definition must not load it
from ..common import check_ratios
from ..replay import write_atomically

START = datetime(2024, 3, 1, tzinfo=UTC)
STATE = ".orders-state.json"
CITIES = [
    ("Berlin", "10115", "DE"), ("Munich", "80331", "DE"), ("Paris", "75001", "FR"),
    ("Lyon", "69001", "FR"), ("Madrid", "28001", "ES"), ("Lisbon", "1100-148", "PT"),
    ("Amsterdam", "1011", "NL"), ("Vienna", "1010", "AT"),
]
NAMES = ["Ada", "Grace", "Linus", "Barbara", "Edsger", "Margaret", "Dennis", "Frances", "Ken", "Radia"]
PRODUCTS = [("p-kb", "keyboard", 49.9), ("p-ms", "mouse", 19.5), ("p-mon", "monitor", 189.0),
            ("p-hd", "headset", 59.0), ("p-cab", "usb cable", 7.25), ("p-lap", "laptop stand", 34.0)]
METHODS = ["card", "paypal", "transfer", "voucher"]
TOTAL_FILES = 2000


def make_order(seed: int, file_no: int, i: int, minutes_per_file: int) -> dict[str, Any]:
    """The ``i``-th order of file ``file_no`` (pure function of its arguments)."""
    import numpy as np
    rng = np.random.default_rng([seed, file_no, i])
    city, postal, country = CITIES[int(rng.integers(len(CITIES)))]
    cust = int(rng.integers(1, 200))
    name = NAMES[cust % len(NAMES)]
    ts = START + timedelta(minutes=(file_no - 1) * minutes_per_file) + timedelta(
        seconds=float(rng.uniform(0, minutes_per_file * 60)))
    n_items = int(rng.integers(0, 4)) if rng.random() < 0.1 else int(rng.integers(1, 4))
    items = []
    for k in range(n_items):
        pid, pname, price = PRODUCTS[int(rng.integers(len(PRODUCTS)))]
        items.append({"item_id": f"{pid}-{k}", "product_name": pname,
                      "quantity": int(rng.integers(1, 4)), "price": price})
    metadata = None if rng.random() < 0.2 else [
        {"key": "channel", "value": ["web", "app", "store"][int(rng.integers(3))]},
        {"key": "campaign", "value": f"c{int(rng.integers(1, 5))}"},
    ][: int(rng.integers(1, 3))]
    return {
        "order_id": f"o-{file_no:06d}-{i:03d}",
        "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "customer": {
            "customer_id": f"c-{cust:04d}", "name": name,
            "email": f"{name.lower()}.{cust}@example.com",
            "address": {"city": city, "postal_code": postal, "country": country},
        },
        "items": items,
        "payment": {"method": METHODS[int(rng.integers(len(METHODS)))],
                    "transaction_id": f"t-{file_no:06d}-{i:03d}"},
        "metadata": metadata,
    }


def _malformed(order: dict[str, Any], kind: int) -> str:
    if kind == 0:  # wrong type: a text where an item's quantity (an int) belongs
        order = json.loads(json.dumps(order))
        order["items"] = order["items"] or [{"item_id": "x", "product_name": "x", "quantity": 1, "price": 1.0}]
        order["items"][0]["quantity"] = "two"
        return json.dumps(order, indent=2)
    text = json.dumps(order, indent=2)
    return text[: len(text) // 2]  # truncated


class OrdersFactory:
    """Lands ``orders_per_file`` orders per multiline JSON file into ``directory``; ratios in
    [0, 1] (``ValueError`` otherwise)."""

    def __init__(
        self,
        directory: Path,
        orders_per_file: int = 15,
        minutes_per_file: int = 15,
        dup_ratio: float = 0.1,
        bad_ratio: float = 0.0,
        seed: int = 7,
    ) -> None:
        check_ratios(dup_ratio=dup_ratio, bad_ratio=bad_ratio)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.orders_per_file = orders_per_file
        self.minutes_per_file = minutes_per_file
        self.dup_ratio = dup_ratio
        self.bad_ratio = bad_ratio
        self.seed = seed
        self._state = self.directory / STATE
        state = json.loads(self._state.read_text()) if self._state.exists() else {}
        self.next_file: int = state.get("next_file", 1)
        #: how many of order file ``next_file``'s files (:meth:`parts`) have landed
        self.next_part: int = state.get("next_part", 0)

    @property
    def exhausted(self) -> bool:
        return self.next_file > TOTAL_FILES

    def orders(self, file_no: int) -> list[dict[str, Any]]:
        return [make_order(self.seed, file_no, i, self.minutes_per_file) for i in range(self.orders_per_file)]

    def parts(self, file_no: int) -> list[tuple[str, str]]:
        """The files order file ``file_no`` lands as, in landing order: one per malformed order
        (``orders_000007_bad_00.json`` …), then the file of its good orders (and re-sent
        ones): (file name, text) each, a pure function of the factory's settings."""
        import numpy as np
        rng = np.random.default_rng([self.seed, file_no, 999])
        good: list[dict[str, Any]] = []
        bad: list[dict[str, Any]] = []
        for order in self.orders(file_no):
            (bad if rng.random() < self.bad_ratio else good).append(order)
        if file_no > 1 and self.dup_ratio > 0:
            good += [o for o in self.orders(file_no - 1) if rng.random() < self.dup_ratio]
        out = [(f"orders_{file_no:06d}_bad_{j:02d}.json", _malformed(order, int(rng.integers(2))))
               for j, order in enumerate(bad)]
        out.append((f"orders_{file_no:06d}.json", json.dumps(good, indent=2)))
        return out

    def land(self, n_files: int = 1) -> list[Path]:
        """Land exactly the next ``n_files`` files (fewer only once the data set is exhausted).
        A malformed order's own file counts as one of them: the files of an order file
        (:meth:`parts`) may be split between two calls, the rest landing first in the next one
        (``next_part`` in the state file)."""
        written: list[Path] = []
        while len(written) < n_files and not self.exhausted:
            parts = self.parts(self.next_file)
            if self.next_part < len(parts):
                name, text = parts[self.next_part]
                written.append(write_atomically(self.directory / name, text))
            self.next_part += 1
            if self.next_part >= len(parts):
                self.next_file, self.next_part = self.next_file + 1, 0
            write_atomically(self._state, json.dumps({"next_file": self.next_file, "next_part": self.next_part}))
        return written
