{# DuckDB: the current values of `count` settings, as text, in one statement (each setting's name a bound
   parameter, in order; current_setting is much cheaper than a scan of duckdb_settings()). #}
SELECT {% for i in range(count) %}CAST(current_setting(?) AS VARCHAR){% if not loop.last %}, {% endif %}{% endfor %}
