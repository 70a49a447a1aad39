"""Operations on top of the read-only checkpoint reader: ``diff`` (what changed between two
snapshots of one checkpoint), ``retention`` (what Spark's own cleanup deletes next) and
``recover`` (the smallest edit that lets Spark restart, applied to a copy).

UI-free and JVM-free: these modules import only :mod:`streamwatch.model` and
:mod:`streamwatch.checkpoint`; they never write under a checkpoint they read (``recover``
writes only into the NEW folder it is given).
"""
