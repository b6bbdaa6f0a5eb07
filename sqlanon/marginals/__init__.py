"""Anonymized marginals (Kifer & Gehrke, "Injecting Utility into Anonymized Datasets", SIGMOD 2006)."""
