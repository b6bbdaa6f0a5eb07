{# The sum of one integer column of a relation (0 for no rows): the rows an anonymized marginal counts. #}
SELECT CAST(COALESCE(SUM({{ column | ident }}), 0) AS BIGINT) FROM {{ relation | relation }}
