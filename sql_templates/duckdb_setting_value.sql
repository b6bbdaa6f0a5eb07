{# DuckDB: one engine setting's current value, as text (its name is a bound parameter). #}
SELECT "value" FROM duckdb_settings() WHERE "name" = ?
