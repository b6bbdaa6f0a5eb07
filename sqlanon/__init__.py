"""sqlanon: anonymize tables where they live, inside a SQL database."""
__version__ = "0.1.0"

