{# Privacy-MaxEnt: rows of a bucketized release's two tables that no reading of Anatomy's tables allows (Xiao &
   Tao, VLDB 2006, Section 3: QIT one row per record, ST one row per (bucket, value) with its count), counted
   per fault so the message can name the first: a NULL bucket, quasi-identifier or sensitive value, or a
   count that is NULL, negative or not whole. Repeated (bucket, value) rows of ST are summed, and zero counts
   add nothing: both are kept. #}
SELECT
  (SELECT COUNT(*) FROM {{ qit | ident }} WHERE "bucket" IS NULL) AS "qit_bucket",
  (SELECT COUNT(*) FROM {{ qit | ident }} WHERE {% for c in qis %}{{ c | ident }} IS NULL{% if not loop.last %} OR {% endif %}{% endfor %}) AS "qit_value",
  (SELECT COUNT(*) FROM {{ st | ident }} WHERE "bucket" IS NULL) AS "st_bucket",
  (SELECT COUNT(*) FROM {{ st | ident }} WHERE {{ sensitive | ident }} IS NULL) AS "st_value",
  (SELECT COUNT(*) FROM {{ st | ident }} WHERE "count" IS NULL OR "count" < 0 OR "count" <> FLOOR("count")) AS "st_count"
