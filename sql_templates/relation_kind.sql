{# 'TABLE' or 'VIEW' for a relation, or nothing (DuckDB, PostgreSQL). Parameters: catalog, schema, name;
   a NULL catalog or schema means the current one (a name written without them). #}
SELECT CASE WHEN table_type = 'VIEW' THEN 'VIEW' ELSE 'TABLE' END
FROM information_schema.tables
WHERE table_catalog = COALESCE(CAST(? AS VARCHAR), current_database())
  AND table_schema = COALESCE(CAST(? AS VARCHAR), current_schema()) AND table_name = ?
