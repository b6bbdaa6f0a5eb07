{# Anatomy's sensitive table: per bucket, each sensitive value and how many of the bucket's rows hold it
   (with temp, the per-block counts of a generalized release, for Privacy-MaxEnt). A value written in several
   ways (0.0 and -0.0 of a float: one value, as the engine groups it) is written as its least text in the
   bucket: the row of that text is taken, not whichever row the grouping met first, so one seed gives one
   table. #}
CREATE OR REPLACE {% if temp %}TEMPORARY {% endif %}TABLE {{ name | ident }} AS
SELECT "bucket", {{ sensitive | ident }}, "count"
FROM (
    SELECT "bucket", {{ sensitive | ident }},
           COUNT(*) OVER (PARTITION BY "bucket", {{ sensitive | ident }}) AS "count",
           ROW_NUMBER() OVER (PARTITION BY "bucket", {{ sensitive | ident }}
                              ORDER BY CAST({{ sensitive | ident }} AS VARCHAR)) AS "__first"
    FROM {{ assigned | ident }}
) AS r
WHERE "__first" = 1
ORDER BY "bucket", {{ sensitive | ident }}
