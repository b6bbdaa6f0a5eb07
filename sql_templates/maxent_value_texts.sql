{# Privacy-MaxEnt: every text of the typed value map `map` (maxent_value_map.sql with typed) that the column
   of `relation` holds, with its value's code: a value named by another of its texts (-0.0 of 0.0) in
   background knowledge is found. #}
SELECT DISTINCT CAST(r.{{ column | ident }} AS VARCHAR) AS "value", m."code"
FROM {{ relation | ident }} AS r
JOIN {{ map | ident }} AS m ON m."typed" = r.{{ column | ident }}
