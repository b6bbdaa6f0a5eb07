"""SQL templates, one file per query shape (jinja2, DuckDB dialect)."""
