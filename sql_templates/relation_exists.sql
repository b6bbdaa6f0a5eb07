{# DuckDB: does the source table exist (in an attached file)? Parameters: catalog (or NULL for the current
   one), table name. PostgreSQL uses relation_kind.sql, Spark its catalog API. #}
SELECT COUNT(*) > 0 FROM information_schema.tables
WHERE table_catalog = COALESCE(?, current_database()) AND table_name = ?
