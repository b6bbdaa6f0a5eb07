{# The distinct non-NULL values of several columns as text, in one scan of the source: (column position i,
   value v). Each column's values key its mapping table. #}
{% for c in columns %}
SELECT {{ loop.index0 | int }} AS "i", CAST({{ c | ident }} AS VARCHAR) AS "v"
FROM {{ source | ident }}
WHERE {{ c | ident }} IS NOT NULL
GROUP BY 2
{% if not loop.last %}UNION ALL
{% endif %}
{% endfor %}
