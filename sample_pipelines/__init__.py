"""Bundled medallion pipelines (bronze → silver → gold) with their data factories."""
