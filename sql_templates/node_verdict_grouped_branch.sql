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
   `node_verdict_branch.sql`): both scans compute it, and the second tests it.

   With `packed` (its field width w, `FrequencySet.packed_group_width`), a block's counts per group are not
   a GROUP BY of (block, group) but one sum per block of a 128-bit integer, each row adding its count times
   2^(w g) for its group g (DuckDB's HUGEINT): the groups' counts are then the sum's base-2^w digits, the
   last one unbounded. It is used where the (block, group) GROUP BY is too large for a perfect hash table:
   one hashed GROUP BY of the blocks instead, at 100 M rows of Lands End 1.4 to 1.9 s instead of 2.7 to 4.7 s for
   the four such nodes (in-process, benchmarks/RESULTS-rows.md). A group of 2^w rows or more in a block
   carries into the next digit; every carry lowers the digits' sum by 2^w - 1, so the digits are the
   counts exactly when they sum to the block's size, and a block where they do not is left undecided (judged
   on its values, as above). No sum overflows: a block's is at most rows * 2^(w (groups - 1)) < 2^127, rows the
   table's sum of counts. #}
{% from "_macros.sql" import block_passes, packed_key, verdict_columns %}
{% set packed = packed | default(none) %}
SELECT {{ verdict_columns(g, wide_squares | default(false)) }}
  , CAST(NULL AS DOUBLE) AS "kept_xl"
  , SUM("undecided") AS "undecided"
FROM (
    WITH "coarse" AS MATERIALIZED (
{% if packed %}
{% set fields = range(group_count) %}
        SELECT "k", "n", ({{ block_passes('"n"', '"d"', '"xl"', min_size, min_distinct, entropy) }} AND "digits" = "n") AS "proven"
        FROM (
            SELECT "k", "n"
              , {% for j in fields %}{% if not loop.first %} + {% endif %}CASE WHEN "f{{ j }}" > 0 THEN 1 ELSE 0 END{% endfor %} AS "d"
              , {% for j in fields %}{% if not loop.first %} + {% endif %}CASE WHEN "f{{ j }}" > 0 THEN "f{{ j }}" * LN("f{{ j }}") ELSE 0 END{% endfor %} AS "xl"
              , {% for j in fields %}{% if not loop.first %} + {% endif %}"f{{ j }}"{% endfor %} AS "digits"
            FROM (
                SELECT "k", "n"
{% for j in fields %}
                  , CAST(("h" >> {{ (packed * j) | int }}){% if not loop.last %} & {{ ((2 ** packed) - 1) | int }}{% endif %} AS BIGINT) AS "f{{ j }}"
{% endfor %}
                FROM (
                    SELECT "k", CAST(SUM("cnt") AS BIGINT) AS "n", SUM("w" * "cnt") AS "h"
                    FROM (
                        SELECT {{ packed_key(block_cols, radix, alias="t") }} AS "k", "m"."w", "t"."cnt"
                        FROM {{ table | ident }} AS "t"
                        JOIN (SELECT "s", CAST(1 AS HUGEINT) << ({{ packed | int }} * "g") AS "w" FROM {{ groups | ident }}) AS "m"
                          ON "m"."s" = "t".{{ sens_col | ident }}
                    ) AS "keyed"
                    GROUP BY "k"
                ) AS "sums"
            ) AS "digits"
        ) AS "blocks"
{% else %}
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
{% endif %}
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
