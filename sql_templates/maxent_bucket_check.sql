{# Buckets whose two published tables disagree: rows in the quasi-identifier table vs the sum of the
   sensitive table's counts (a bucket missing from one side counts as 0 there). #}
SELECT COALESCE(q."b", s."b") AS "b", COALESCE(q."n", 0) AS "rows_qit", COALESCE(s."n", 0) AS "rows_st"
FROM (SELECT "b", SUM("n") AS "n" FROM {{ qb | ident }} GROUP BY "b") AS q
FULL OUTER JOIN (SELECT "b", SUM("n") AS "n" FROM {{ sb | ident }} GROUP BY "b") AS s ON q."b" = s."b"
WHERE COALESCE(q."n", 0) <> COALESCE(s."n", 0)
ORDER BY 1
LIMIT 5
