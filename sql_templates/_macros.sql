{# Shared pieces of the node queries (imported, never run on their own). With an entity key the
   frequency sets hold one row per (cell, person) in column "e", and a count is of distinct persons. #}
{% macro count_of(entity) -%}
{% if entity %}COUNT(DISTINCT "e"){% else %}SUM("cnt"){% endif %}
{%- endmacro %}

{% macro pivot_sums(pivots, entity=False) %}
{% for col, m in pivots %}
{% for v in range(m) %}
{% if entity %}
  , COUNT(DISTINCT CASE WHEN {{ col | ident }} = {{ v | int }} THEN "e" END) AS {{ ('%s_%d' % (col, v)) | ident }}
{% else %}
  , SUM(CASE WHEN {{ col | ident }} = {{ v | int }} THEN "cnt" ELSE 0 END) AS {{ ('%s_%d' % (col, v)) | ident }}
{% endif %}
{% endfor %}
{% endfor %}
{% endmacro %}

{# An integer code, cast to the narrow type the engine stores codes in (`Backend.code_type`) when it has one. #}
{% macro code(expr, type) -%}
{% if type %}CAST({{ expr }} AS {{ type | sqltype }}){% else %}{{ expr }}{% endif %}
{%- endmacro %}
