"""UCI Adult (45,222 complete rows), its generalization hierarchies and example policies."""
