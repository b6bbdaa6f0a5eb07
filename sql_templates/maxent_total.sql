{# The records a Privacy-MaxEnt count table holds (the sum of its "n"). #}
SELECT COALESCE(SUM("n"), 0) FROM {{ relation | ident }}
