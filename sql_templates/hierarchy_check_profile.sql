{# One data column against a hierarchy's base values (sqlanon hierarchy check): rows, NULLs, distinct
   values, and base values the data never uses. #}
SELECT COUNT(*) AS "rows"
     , COUNT(*) - COUNT({{ column | ident }}) AS nulls
     , COUNT(DISTINCT CAST({{ column | ident }} AS VARCHAR)) AS "distinct"
     , (SELECT COUNT(*) FROM {{ values_table | ident }} AS h
        WHERE NOT EXISTS (SELECT 1 FROM {{ source | ident }} AS s
                          WHERE CAST(s.{{ column | ident }} AS VARCHAR) = h."value")) AS unused
FROM {{ source | ident }}
