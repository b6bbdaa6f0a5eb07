{# 'TABLE' or 'VIEW' for a relation of the current database's current schema, or nothing (DuckDB, PostgreSQL). #}
SELECT CASE WHEN table_type = 'VIEW' THEN 'VIEW' ELSE 'TABLE' END
FROM information_schema.tables
WHERE table_catalog = current_database() AND table_schema = current_schema() AND table_name = ?
