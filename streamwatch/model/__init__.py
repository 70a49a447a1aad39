"""Pure, immutable model objects shared by every adapter and front-end, one module per subject
(``events``, ``checkpoint``, ``statestore``, ``runtime`` …); import from those modules. The
package itself imports nothing, so a reader of one subject (the checkpoint inspector) does
not load the others.

Nothing here imports pyspark or textual (enforced by ``tests/unit/test_boundaries.py``).
"""
