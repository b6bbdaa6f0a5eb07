{# DuckDB: names of the temporary tables of this connection (to pick free names for a run's work tables);
   PostgreSQL: temporary_tables_postgres.sql; Spark: its catalog API. #}
SELECT table_name FROM duckdb_tables() WHERE temporary
