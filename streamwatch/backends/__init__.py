"""What feeds the dashboard: the typed :class:`~streamwatch.backends.base.Backend` base class
and the replay backend (the live Spark backend is :class:`streamwatch.spark.live.LiveBackend`).
No textual, no pyspark here."""
