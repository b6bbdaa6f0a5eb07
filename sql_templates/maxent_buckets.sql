{# Privacy-MaxEnt: the release's buckets (from both published tables), numbered 0.. in label order. #}
CREATE OR REPLACE TEMPORARY TABLE {{ out | ident }} AS
SELECT "label", CAST(ROW_NUMBER() OVER (ORDER BY "label") - 1 AS INTEGER) AS "b"
FROM (SELECT "bucket" AS "label" FROM {{ qit | ident }}
      UNION
      SELECT "bucket" AS "label" FROM {{ st | ident }}) AS d
