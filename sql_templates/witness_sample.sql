{# A fixed random sample of the wide frequency set's cells (DuckDB's reservoir sampling, seeded): the blocks
   its cells fall in, at any node, are the ones a witness check judges first (`NodeChecker.satisfied_many`).
   Only engines that sample rows this way run it (`Backend.samples_rows`). #}
CREATE OR REPLACE TEMPORARY TABLE {{ name | ident }} AS
SELECT * FROM {{ wide | ident }} USING SAMPLE reservoir({{ rows | int }} ROWS) REPEATABLE ({{ seed | int }})
