"""The version of sqlanon (its own module, so that a submodule can read it without importing the package)."""

__version__ = "0.1.0"
