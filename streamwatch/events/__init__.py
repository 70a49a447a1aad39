"""Event plumbing that needs no JVM: the non-blocking hand-off between Spark's listener
thread and whoever consumes events (:mod:`.bus`), the JSONL recording format and recorder
(:mod:`.jsonl`), readers for recordings and Spark event logs (:mod:`.reader`,
:mod:`.eventlog`, :mod:`.codecs`), summaries (:mod:`.summary`) and redaction (:mod:`.redact`).
Import from those modules: the package itself imports nothing, so a user of one (the state
reader's codecs) does not load the others."""
