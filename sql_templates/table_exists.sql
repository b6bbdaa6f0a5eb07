{# DuckDB: is there a table or view of this name in any schema? Case-folded, as DuckDB matches names. #}
SELECT COUNT(*) > 0 FROM information_schema.tables WHERE lower(table_name) = lower(?)
