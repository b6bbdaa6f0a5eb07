{# One scan: the row count and the NULLs of each quasi-identifier and sensitive column. #}
SELECT {% if entity %}COUNT(DISTINCT {{ entity | ident }}){% else %}COUNT(*){% endif %} AS "rows"
{% for c in columns %}
     , COUNT(*) - COUNT({{ c | ident }}) AS {{ ('nulls_%d' % loop.index0) | ident }}
{% endfor %}
FROM {{ source | ident }}
