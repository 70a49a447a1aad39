"""UI-free logic every front-end shares (no pyspark, no textual)."""
