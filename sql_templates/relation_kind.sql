{# 'TABLE' or 'VIEW' for a relation, or nothing (DuckDB, PostgreSQL). Parameters: catalog, schema, name;
   a NULL catalog or schema means the current one (a name written without them). With `fold` (DuckDB, whose
   names match whatever their case, quoted or not) the names are compared case-folded: an exact comparison
   took a release named DASHBOARD for a new name beside the user's view dashboard, which it then replaced. #}
{% macro name_is(column, value) -%}
{% if fold %}lower({{ column }}) = lower({{ value }}){% else %}{{ column }} = {{ value }}{% endif %}
{%- endmacro %}
SELECT CASE WHEN table_type = 'VIEW' THEN 'VIEW' ELSE 'TABLE' END
FROM information_schema.tables
WHERE {{ name_is("table_catalog", "COALESCE(CAST(? AS VARCHAR), current_database())") }}
  AND {{ name_is("table_schema", "COALESCE(CAST(? AS VARCHAR), current_schema())") }}
  AND {{ name_is("table_name", "?") }}
