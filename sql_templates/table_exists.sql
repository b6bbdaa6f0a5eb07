{# DuckDB: is there a table or view of this name in any schema? Its ASCII letters case-folded, as DuckDB matches
   names (relation_kind.sql). #}
{% from "_macros.sql" import ascii_lower %}
SELECT COUNT(*) > 0 FROM information_schema.tables WHERE {{ ascii_lower("table_name") }} = {{ ascii_lower("?") }}
