{# Rows of a relation whose entity key is NULL: a class of such rows counts 0 persons (COUNT(DISTINCT) skips
   NULLs), so risk 1 / size divided by zero, and a class mixing them dropped those rows silently. #}
SELECT COUNT(*) - COUNT({{ entity | ident }}) AS "nulls"
FROM {{ relation | relation }}
