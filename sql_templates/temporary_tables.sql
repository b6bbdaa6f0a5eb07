{# Names of the temporary tables of this connection (to pick free names for a run's work tables). #}
SELECT table_name FROM duckdb_tables() WHERE temporary
