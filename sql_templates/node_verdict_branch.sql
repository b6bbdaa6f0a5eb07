{# One lattice node judged in the database, as one branch of a batch: a single row with what the
   optimum search needs of the node (`checker.NodeStats`), so none of its blocks leaves the database.

   Per q*-block (the node's code columns `block_cols`): its size n, the number d of distinct values of
   one sensitive attribute (`sens_col`) and xl = sum over those values of c ln c (c: the value's count in
   the block). A block is kept when n >= min_size, d >= min_distinct and, with `entropy` (ln l less the
   models' tolerance), its entropy ln n - xl / n reaches it (TKDD Def. 4.1; `EntropyLDiversity`).
   The row: the node's position g in the batch, its classes, the sum of their squared sizes and the
   smallest size (over every class), the rows in classes not kept, the classes kept and their squared
   sizes, and the sum of their xl (the node-dependent part of the KL-divergence, `metrics`). Sums of
   squares are exact: BIGINT up to 3.04e9 rows, DECIMAL(38, 0) with `wide_squares` (macro `verdict_columns`).

   With `witness` (a sample of the table's cells, `witness_sample.sql`) only the blocks holding a sampled
   cell are judged, each whole: every one of them that fails is a block the node must suppress, so more
   suppressed rows than the budget prove the node fails, at the cost of one filtered scan.

   With `radix` (each block column's number of codes, their product below 2^62) the block is one BIGINT
   "k", its codes in mixed radix as in `node_sparse_branch.sql`, and both GROUP BYs are on it: one key
   column instead of several. A value's count in a block is a BIGINT: the engine's SUM of BIGINTs is wider
   (DuckDB: HUGEINT), and every later step on it was slower (at 100 M rows, 12.5 -> 11.2 s for a node of
   636,800 blocks, in-process, one run; the whole search did not change measurably). #}
{% from "_macros.sql" import block_passes, packed_key, verdict_columns %}
{% set radix = radix | default(none) %}
SELECT {{ verdict_columns(g, wide_squares | default(false)) }}
  , SUM(CASE WHEN "ok" THEN "xl" ELSE 0 END) AS "kept_xl"
FROM (
    SELECT "n", "xl", {{ block_passes('"n"', '"d"', '"xl"', min_size, min_distinct, entropy) }} AS "ok"
    FROM (
        SELECT SUM("c") AS "n", COUNT(*) AS "d", SUM("c" * LN("c")) AS "xl"
        FROM (
{% if radix %}
            SELECT "k", "s", CAST(SUM("cnt") AS BIGINT) AS "c"
            FROM (
                SELECT {{ packed_key(block_cols, radix, alias="t") }} AS "k"
                  , "t".{{ sens_col | ident }} AS "s", "t"."cnt"
{% else %}
            SELECT {% for c in block_cols %}"t".{{ c | ident }}, {% endfor %}"t".{{ sens_col | ident }}, CAST(SUM("t"."cnt") AS BIGINT) AS "c"
{% endif %}
            FROM {{ table | ident }} AS "t"
{% if witness | default(none) and block_cols %}
            WHERE EXISTS (SELECT 1 FROM {{ witness | ident }} AS "w"
                WHERE {% for c in block_cols %}"w".{{ c | ident }} = "t".{{ c | ident }}{% if not loop.last %} AND {% endif %}{% endfor %})
{% endif %}
{% if radix %}
            ) AS "keyed"
            GROUP BY "k", "s"
        ) AS "cells"
        GROUP BY "k"
{% else %}
            GROUP BY {% for c in block_cols %}{{ c | ident }}, {% endfor %}{{ sens_col | ident }}
        ) AS "cells"
{% if block_cols %}
        GROUP BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% endif %}
{% endif %}
    ) AS "blocks"
) AS "judged"
