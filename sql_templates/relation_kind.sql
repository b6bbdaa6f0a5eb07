{# 'TABLE' or 'VIEW' for a relation, or nothing (DuckDB, PostgreSQL). Parameters: catalog, schema, name;
   a NULL catalog or schema means the current one (a name written without them). With `fold` (DuckDB, whose
   names match whatever the case of their ASCII letters, quoted or not) the names are compared so folded: an exact
   comparison took a release named DASHBOARD for a new name beside the user's view dashboard, which it then
   replaced. Only ASCII: DuckDB holds "été" and "ÉTÉ" apart, which lower() would take for one. #}
{% from "_macros.sql" import ascii_lower %}
{% set fold = fold | default(false) %}
{% macro name_is(column, value) -%}
{% if fold %}{{ ascii_lower(column) }} = {{ ascii_lower(value) }}{% else %}{{ column }} = {{ value }}{% endif %}
{%- endmacro %}
SELECT CASE WHEN table_type = 'VIEW' THEN 'VIEW' ELSE 'TABLE' END
FROM information_schema.tables
WHERE {{ name_is("table_catalog", "COALESCE(CAST(? AS VARCHAR), current_database())") }}
  AND {{ name_is("table_schema", "COALESCE(CAST(? AS VARCHAR), current_schema())") }}
  AND {{ name_is("table_name", "?") }}
