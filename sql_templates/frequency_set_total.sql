{# The source rows the bottom frequency set holds (the sum of its counts): fewer than the source's when a
   value of a quasi-identifier is missing from its mapping table (the frequency set's inner joins drop it). #}
SELECT CAST(COALESCE(SUM("cnt"), 0) AS BIGINT) AS "rows" FROM {{ fs | ident }}
