{# 'TABLE' or 'VIEW' for a relation of the current database's main schema, or nothing. #}
SELECT CASE WHEN table_type = 'VIEW' THEN 'VIEW' ELSE 'TABLE' END
FROM information_schema.tables
WHERE table_catalog = current_database() AND table_schema = 'main' AND table_name = ?
