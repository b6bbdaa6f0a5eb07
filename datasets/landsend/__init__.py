"""Synthetic Lands End point-of-sale table: a seeded generator (the real data is not public)."""
