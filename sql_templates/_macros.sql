{# Shared pieces of the node queries (imported, never run on their own). #}
{% macro pivot_sums(pivots) %}
{% for col, m in pivots %}
{% for v in range(m) %}
  , SUM(CASE WHEN {{ col | ident }} = {{ v | int }} THEN "cnt" ELSE 0 END) AS {{ ('%s_%d' % (col, v)) | ident }}
{% endfor %}
{% endfor %}
{% endmacro %}
