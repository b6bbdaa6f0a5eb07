"""Datasets shipped with sqlanon."""
