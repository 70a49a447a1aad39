"""The Textual dashboard. Receives model objects only; never imports pyspark."""
