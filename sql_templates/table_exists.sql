{# DuckDB: is there a table or view of this name in any schema? #}
SELECT COUNT(*) > 0 FROM information_schema.tables WHERE table_name = ?
