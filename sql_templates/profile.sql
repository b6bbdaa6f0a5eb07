{# One scan: the row count and the NULLs of each quasi-identifier and sensitive column. #}
SELECT COUNT(*) AS "rows"
{% for c in columns %}
     , COUNT(*) - COUNT({{ c | ident }}) AS {{ ('nulls_%d' % loop.index0) | ident }}
{% endfor %}
FROM {{ source | ident }}
