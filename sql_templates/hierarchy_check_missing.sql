{# Values of a data column that a hierarchy does not list as a base value, with their rows
   (sqlanon hierarchy check; the hierarchy's base values are in a small table, column "value"). #}
SELECT CAST(src.{{ column | ident }} AS VARCHAR) AS v, COUNT(*) AS n
FROM {{ source | ident }} AS src
WHERE src.{{ column | ident }} IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM {{ values_table | ident }} AS h
                  WHERE h."value" = CAST(src.{{ column | ident }} AS VARCHAR))
GROUP BY 1
ORDER BY 1
