"""Reproductions of the source papers' experiments (DESIGN.md section 7)."""
