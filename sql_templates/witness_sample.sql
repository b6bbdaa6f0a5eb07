{# A fixed pseudo-random sample of the wide frequency set's cells: the `rows` cells with the smallest hash of
   their bottom codes (`key_cols`: every level-0 code, the sensitive codes, the person) and `seed`, ties
   broken by those codes. It depends on the cells alone, not on the order the table's rows were written in:
   DuckDB's seeded reservoir sample drew other cells when a multi-threaded sort wrote the same rows in
   another order, so runs of the same code judged different nodes by witness checks. The blocks its cells
   fall in, at any node, are the ones a witness check judges first (`NodeChecker.satisfied_many`). Only
   engines that run it (`Backend.samples_rows`). #}
CREATE OR REPLACE TEMPORARY TABLE {{ name | ident }} AS
SELECT * FROM {{ wide | ident }}
ORDER BY hash({% for c in key_cols %}{{ c | ident }}, {% endfor %}{{ seed | int }}){% for c in key_cols %}, {{ c | ident }}{% endfor %}

LIMIT {{ rows | int }}
