{# A sensitive column's distinct values and distinct texts (`FrequencySet._refuse_values_written_apart`): more texts
   than values means equal values written apart (a PostgreSQL composite holding -0 and 0, a range holding 1.5 and
   1.50), which sqlanon, counting this type's values by their text, would count apart; fewer, distinct values
   written alike (a DuckDB union's 1 and '1'), which it would count as one. #}
SELECT COUNT(DISTINCT {{ column | ident }}) AS "values",
       COUNT(DISTINCT CAST({{ column | ident }} AS VARCHAR)) AS "texts"
FROM {{ source | ident }}
