{# Values of a column that its mapping table does not cover (at most a few, to name them). #}
SELECT DISTINCT CAST(src.{{ column | ident }} AS VARCHAR) AS v
FROM {{ source | ident }} AS src
WHERE src.{{ column | ident }} IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM {{ map_table | ident }} AS m
                  WHERE m."value" = CAST(src.{{ column | ident }} AS VARCHAR))
ORDER BY 1
LIMIT 5
