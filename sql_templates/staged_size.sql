{# The staged source's size (`stage_source.sql`): its rows (distinct combinations of the columns read) and
   the source rows they stand for (the sum of `weight`). #}
SELECT COUNT(*) AS "groups", CAST(COALESCE(SUM({{ weight | ident }}), 0) AS BIGINT) AS "rows"
FROM {{ source | ident }}
