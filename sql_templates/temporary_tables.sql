{# DuckDB: names of the temporary tables and views of this connection (to pick free names for a run's work
   tables, one of which becomes a view: `bottom_as_view.sql`); PostgreSQL: temporary_tables_postgres.sql;
   Spark: its catalog API. #}
SELECT table_name FROM duckdb_tables() WHERE temporary
UNION ALL
SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal
