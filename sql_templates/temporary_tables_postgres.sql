{# PostgreSQL: names of this session's temporary tables (the temporary_tables.sql of DuckDB). #}
SELECT c.relname FROM pg_catalog.pg_class AS c WHERE c.relnamespace = pg_my_temp_schema()
