{# Anatomy's sensitive table: per bucket, each sensitive value and how many of the bucket's rows hold it
   (with temp, the per-block counts of a generalized release, for Privacy-MaxEnt). #}
CREATE OR REPLACE {% if temp %}TEMPORARY {% endif %}TABLE {{ name | ident }} AS
SELECT "bucket", {{ sensitive | ident }}, COUNT(*) AS "count"
FROM {{ assigned | ident }}
GROUP BY "bucket", {{ sensitive | ident }}
ORDER BY "bucket", {{ sensitive | ident }}
