{# Does the source table exist? Parameters: catalog (or NULL for the current one), table name. #}
SELECT COUNT(*) > 0 FROM information_schema.tables
WHERE table_catalog = COALESCE(?, current_database()) AND table_name = ?
