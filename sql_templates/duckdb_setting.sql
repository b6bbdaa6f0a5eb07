{# DuckDB: one engine setting from the policy (source.memory_limit, temp_directory, threads); the setting's
   name comes from sqlanon, its value is a bound parameter. #}
SET {{ name | ident }} = ?
