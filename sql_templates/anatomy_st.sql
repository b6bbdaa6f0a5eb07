{# Anatomy's sensitive table: per bucket, each sensitive value and how many of the bucket's rows hold it
   (with temp, the per-block counts of a generalized release, for Privacy-MaxEnt). A value written in several
   ways (0.0 and -0.0 of a float: one value, as the engine groups it) is written as its least text in the
   bucket, not as whichever row the grouping met first, so one seed gives one table: the rows are grouped by
   value and text first (as fast as by value alone), and the window runs over those few groups. #}
CREATE OR REPLACE {% if temp %}TEMPORARY {% endif %}TABLE {{ name | ident }} AS
SELECT "bucket", {{ sensitive | ident }}, "count"
FROM (
    SELECT "bucket", {{ sensitive | ident }},
           CAST(SUM("n") OVER (PARTITION BY "bucket", {{ sensitive | ident }}) AS BIGINT) AS "count",
           ROW_NUMBER() OVER (PARTITION BY "bucket", {{ sensitive | ident }} ORDER BY "text") AS "__first"
    FROM (
        SELECT "bucket", {{ sensitive | ident }}, CAST({{ sensitive | ident }} AS VARCHAR) AS "text", COUNT(*) AS "n"
        FROM {{ assigned | ident }}
        GROUP BY "bucket", {{ sensitive | ident }}, CAST({{ sensitive | ident }} AS VARCHAR)
    ) AS g
) AS r
WHERE "__first" = 1
ORDER BY "bucket", {{ sensitive | ident }}
