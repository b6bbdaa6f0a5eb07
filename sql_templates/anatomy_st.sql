{# Anatomy's sensitive table: per bucket, each sensitive value and how many of the bucket's rows hold it
   (with temp, the per-block counts of a generalized release, for Privacy-MaxEnt).
   With `written_apart` (a column whose type may write one value in several ways, `dialects.compared_type`: 0.0
   and -0.0 of a float, one value as the engine groups it), a value is written in every bucket as its least text
   in the whole table: not as whichever row a grouping met first (one seed, one table, whatever the threads), and
   not as a bucket's own rows write it (which would tell which rows were -0.0). The rows are grouped by value and
   text first, and the rest runs over those groups; casting every row to text costs 2.7 times the plain
   GROUP BY (benchmarks/bench_anatomy_st.py, RESULTS-maxent.md), so other columns keep it. #}
CREATE OR REPLACE {% if temp %}TEMPORARY {% endif %}TABLE {{ name | ident }} AS
{% if not written_apart %}
SELECT "bucket", {{ sensitive | ident }}, COUNT(*) AS "count"
FROM {{ assigned | ident }}
GROUP BY "bucket", {{ sensitive | ident }}
ORDER BY "bucket", {{ sensitive | ident }}
{% else %}
WITH g AS (
    SELECT "bucket", {{ sensitive | ident }} AS "value", CAST({{ sensitive | ident }} AS VARCHAR) AS "text",
           COUNT(*) AS "n"
    FROM {{ assigned | ident }}
    GROUP BY "bucket", {{ sensitive | ident }}, CAST({{ sensitive | ident }} AS VARCHAR)
), classes AS (
    SELECT "value", MIN("text") AS "least"
    FROM g
    GROUP BY "value"
), cells AS (
    SELECT g."bucket", c."least", SUM(g."n") AS "n"
    FROM g
    JOIN classes AS c ON c."value" = g."value"
    GROUP BY g."bucket", c."least"
), written AS (
    {# the value as its least text writes it, taken from a group of that text: a typed value carried through a
       join or a window's partition may come out as the other zero (DuckDB) #}
    SELECT "text", MIN("value") AS "value"
    FROM g
    GROUP BY "text"
)
SELECT cells."bucket", w."value" AS {{ sensitive | ident }}, CAST(cells."n" AS BIGINT) AS "count"
FROM cells
JOIN written AS w ON w."text" = cells."least"
ORDER BY cells."bucket", w."value"
{% endif %}
