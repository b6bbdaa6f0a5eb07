{# The distinct non-NULL values of one column, as text (the key of the mapping tables). #}
SELECT DISTINCT CAST({{ column | ident }} AS VARCHAR) AS v
FROM {{ source | ident }}
WHERE {{ column | ident }} IS NOT NULL
ORDER BY 1
