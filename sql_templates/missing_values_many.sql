{# Values of several columns that their mapping tables do not cover (at most a few per column, to name them):
   (column position i, value v). #}
{% for c in checks %}
SELECT * FROM (
    SELECT DISTINCT {{ loop.index0 | int }} AS "i", CAST(src.{{ c.column | ident }} AS VARCHAR) AS "v"
    FROM {{ source | ident }} AS src
    WHERE src.{{ c.column | ident }} IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM {{ c.map_table | ident }} AS m
                      WHERE m."value" = CAST(src.{{ c.column | ident }} AS VARCHAR))
    ORDER BY 2
    LIMIT 5
) AS {{ ('m%d' % loop.index0) | ident }}
{% if not loop.last %}UNION ALL
{% endif %}
{% endfor %}
