{# One lattice node judged in the database as `node_verdict_branch.sql` judges it (the same row but for
   kept_xl, and with "undecided"), first on groups of the sensitive values, then exactly only where the
   groups leave a block undecided.

   Grouping never raises a block's entropy, nor its number of distinct values: for any function g of the
   value, H(g(S)) <= H(S) (the entropy of a function of a random variable; Cover & Thomas, Elements of
   Information Theory, 2nd ed., exercise 2.4), and g(S) takes at most as many values as S. So a block of at
   least `min_size` rows whose counts per group (`groups`: code "s" -> group "g") reach `min_distinct`
   groups and, with `entropy`, an entropy of `entropy`, passes the exact tests (TKDD Def. 4.1): it is
   "proven". A block below `min_size` fails. Every other block is undecided, and only those blocks' cells
   are counted per value (a second scan, filtered to their keys) and judged exactly (`block_passes`, its
   size test included, which holds for them). So the verdict and every count of the row equal the exact
   query's; kept_xl (the kept blocks' sum of c ln c over values) is not known here and is NULL.

   Where nearly every row is its own (block, value) cell, the per-group GROUP BY holds several times fewer
   groups: at 100 M rows of Lands End, with 16 groups of its 147 costs, a minimal node of 255,624 blocks
   (none undecided) was judged in 4.1 s instead of 7.1 s, one of 702,966 blocks (7 undecided) in 7.2 s
   instead of 13.2 s (in-process, one run each; benchmarks/RESULTS-rows.md has the whole search).
   "coarse" is materialized: it is read twice. The block is one packed key ("k", `radix`, as in
   `node_verdict_branch.sql`): both scans compute it, and the second tests it. #}
{% from "_macros.sql" import block_passes, packed_key, verdict_columns %}
SELECT {{ verdict_columns(g) }}
  , CAST(NULL AS DOUBLE) AS "kept_xl"
  , SUM("undecided") AS "undecided"
FROM (
    WITH "coarse" AS MATERIALIZED (
        SELECT "k", "n", {{ block_passes('"n"', '"d"', '"xl"', min_size, min_distinct, entropy) }} AS "proven"
        FROM (
            SELECT "k", SUM("c") AS "n", COUNT(*) AS "d", SUM("c" * LN("c")) AS "xl"
            FROM (
                SELECT "k", "vg", CAST(SUM("cnt") AS BIGINT) AS "c"
                FROM (
                    SELECT {{ packed_key(block_cols, radix, alias="t") }} AS "k", "m"."g" AS "vg", "t"."cnt"
                    FROM {{ table | ident }} AS "t"
                    JOIN {{ groups | ident }} AS "m" ON "m"."s" = "t".{{ sens_col | ident }}
                ) AS "keyed"
                GROUP BY "k", "vg"
            ) AS "cells"
            GROUP BY "k"
        ) AS "blocks"
    )
    SELECT "coarse"."n"
      , CASE WHEN "coarse"."proven" THEN TRUE WHEN "exact"."ok" IS NULL THEN FALSE ELSE "exact"."ok" END AS "ok"
      , CASE WHEN "exact"."ok" IS NULL THEN 0 ELSE 1 END AS "undecided"
    FROM "coarse"
    LEFT JOIN (
        SELECT "k", {{ block_passes('SUM("c")', 'COUNT(*)', 'SUM("c" * LN("c"))', min_size, min_distinct, entropy) }} AS "ok"
        FROM (
            SELECT "k", "s", CAST(SUM("cnt") AS BIGINT) AS "c"
            FROM (
                SELECT {{ packed_key(block_cols, radix, alias="t") }} AS "k", "t".{{ sens_col | ident }} AS "s", "t"."cnt"
                FROM {{ table | ident }} AS "t"
            ) AS "keyed"
            WHERE "k" IN (SELECT "k" FROM "coarse" WHERE NOT "proven" AND "n" >= {{ min_size | int }})
            GROUP BY "k", "s"
        ) AS "cells"
        GROUP BY "k"
    ) AS "exact" ON "exact"."k" = "coarse"."k"
) AS "judged"
