{# DuckDB: does the source table exist (in an attached file)? Parameters: catalog, schema, table name; a
   NULL catalog or schema means the current one. PostgreSQL uses relation_kind.sql, Spark its catalog API. #}
SELECT COUNT(*) > 0 FROM information_schema.tables
WHERE table_catalog = COALESCE(CAST(? AS VARCHAR), current_database())
  AND table_schema = COALESCE(CAST(? AS VARCHAR), current_schema()) AND table_name = ?
