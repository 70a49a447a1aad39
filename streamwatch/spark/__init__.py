"""The only package that imports pyspark: session factory, tables, listener, runner.

Import the submodules directly (``streamwatch.spark.session`` …); this package's own import
stays free of pyspark so ``streamwatch doctor`` can report a broken install cleanly.
"""
