-- Synthetic Lands End point-of-sale table (docs/DESIGN.md section 6; TKDD l-diversity paper, Figure 8).
-- Sections are separated by "-- name: <section>" lines; generate.py runs them in order.
-- Placeholders ($name) are filled by generate.py with integers it computes (row count, domain
-- sizes, per-column keys derived from the seed) and with the quoted table name; nothing else.
-- Randomness comes from an integer hash of (row number, key) below, not from random(), so the
-- output is the same for a given seed whatever the number of threads.

-- name: macros
-- murmur3's 32-bit finalizer, in UBIGINT arithmetic (every product stays below 2^64).
CREATE OR REPLACE TEMP MACRO ls_m1(x) AS (xor(x, x >> 16) * 2246822507::UBIGINT) % 4294967296::UBIGINT;
CREATE OR REPLACE TEMP MACRO ls_m2(x) AS (xor(x, x >> 13) * 3266489909::UBIGINT) % 4294967296::UBIGINT;
CREATE OR REPLACE TEMP MACRO ls_m3(x) AS xor(x, x >> 16);
CREATE OR REPLACE TEMP MACRO ls_hash(x, k) AS
    ls_m3(ls_m2(ls_m1(xor(CAST(x AS UBIGINT) % 4294967296::UBIGINT, CAST(k AS UBIGINT)))));
-- a uniform draw in (0, 1) for row x under the two keys of one column
CREATE OR REPLACE TEMP MACRO ls_unif(x, k1, k2) AS
    (CAST(ls_hash(ls_hash(x, k1), k2) AS DOUBLE) + 0.5) / 4294967296.0;
-- Zipf-like popularity rank in 1..d: the inverse CDF of a bounded Pareto on [1, d + 1) with
-- exponent s (P(rank = r) is about proportional to r^-s), floored.
CREATE OR REPLACE TEMP MACRO ls_zipf(u, d, s) AS
    least(d, greatest(1, CAST(floor(
        CASE WHEN s = 1.0 THEN pow(d + 1.0, u)
             ELSE pow(1.0 - u * (1.0 - pow(d + 1.0, 1.0 - s)), 1.0 / (1.0 - s)) END) AS BIGINT)));
-- Coverage: when the table has at least 10 rows per domain value, the rows floor(v * n / d),
-- v = 0 .. d-1, spread evenly over the table, take rank v + 1, so every value of the domain occurs.
CREATE OR REPLACE TEMP MACRO ls_cover(r, n, d) AS
    CASE WHEN n >= 10 * d
          AND (r * d + n - 1) // n < d
          AND (((r * d + n - 1) // n) * n) // d = r
         THEN (r * d + n - 1) // n + 1 END;

-- name: domains
-- One temp table per column: its domain values and their popularity rank (1 = most frequent).
CREATE OR REPLACE TEMP TABLE ls_dom_zipcode AS
SELECT lpad(CAST(v AS VARCHAR), 5, '0') AS value,
       row_number() OVER (ORDER BY ls_hash(v, $k_zipcode_rank), v) AS rank
FROM (SELECT range AS v FROM range(501, 99951)
      ORDER BY ls_hash(range, $k_zipcode_pick), range LIMIT $d_zipcode);

CREATE OR REPLACE TEMP TABLE ls_dom_order_date AS
SELECT DATE '2004-01-01' + CAST(v AS INTEGER) AS value,
       row_number() OVER (ORDER BY ls_hash(v, $k_order_date_rank), v) AS rank
FROM (SELECT range AS v FROM range($d_order_date));

CREATE OR REPLACE TEMP TABLE ls_dom_gender AS
SELECT * FROM (VALUES ('F', 1), ('M', 2)) t(value, rank);

CREATE OR REPLACE TEMP TABLE ls_dom_style AS
SELECT CAST(v AS INTEGER) AS value,
       row_number() OVER (ORDER BY ls_hash(v, $k_style_rank), v) AS rank
FROM (SELECT range AS v FROM range(10000, 100000)
      ORDER BY ls_hash(range, $k_style_pick), range LIMIT $d_style);

-- prices in cents, 100 .. 9999 (1.00 to 99.99 dollars), ending in 0 or 5 cents or in .99; picked without replacement
-- with weight price^-1/2 (Efraimidis-Spirakis: the largest u^(1/w)), so cheap items are more common
CREATE OR REPLACE TEMP TABLE ls_dom_price AS
SELECT CAST(v AS INTEGER) AS value,
       row_number() OVER (ORDER BY ls_hash(v, $k_price_rank), v) AS rank
FROM (SELECT range AS v FROM range(100, 10000)
      WHERE range % 5 = 0 OR range % 100 = 99
      ORDER BY sqrt(range) * ln(ls_unif(range, $k_price_pick, $k_price_pick2)) DESC, range
      LIMIT $d_price);

CREATE OR REPLACE TEMP TABLE ls_dom_quantity AS
SELECT * FROM (VALUES (1, 1)) t(value, rank);

CREATE OR REPLACE TEMP TABLE ls_dom_shipment AS
SELECT * FROM (VALUES ('Standard', 1), ('Express', 2)) t(value, rank);

-- name: table
CREATE TABLE $table AS
WITH draws AS (
    SELECT range AS r,
           coalesce(ls_cover(range, $rows, $d_zipcode),
                    ls_zipf(ls_unif(range, $k_zipcode_1, $k_zipcode_2), $d_zipcode, $s_zipcode)) AS zipcode_rank,
           coalesce(ls_cover(range, $rows, $d_order_date),
                    ls_zipf(ls_unif(range, $k_order_date_1, $k_order_date_2), $d_order_date, $s_order_date))
               AS order_date_rank,
           coalesce(ls_cover(range, $rows, $d_gender),
                    ls_zipf(ls_unif(range, $k_gender_1, $k_gender_2), $d_gender, $s_gender)) AS gender_rank,
           coalesce(ls_cover(range, $rows, $d_style),
                    ls_zipf(ls_unif(range, $k_style_1, $k_style_2), $d_style, $s_style)) AS style_rank,
           coalesce(ls_cover(range, $rows, $d_price),
                    ls_zipf(ls_unif(range, $k_price_1, $k_price_2), $d_price, $s_price)) AS price_rank,
           coalesce(ls_cover(range, $rows, $d_shipment),
                    ls_zipf(ls_unif(range, $k_shipment_1, $k_shipment_2), $d_shipment, $s_shipment))
               AS shipment_rank,
           ls_cover(range, $rows, $d_cost) AS cost_rank,
           ls_unif(range, $k_cost_1, $k_cost_2) AS cost_u
    FROM range($rows)
)
SELECT z.value AS zipcode,
       d.value AS order_date,
       g.value AS gender,
       st.value AS style,
       p.value AS price,
       q.value AS quantity,
       sh.value AS shipment,
       -- cost: the price times a factor in [0.5, 1.5), in cents, rounded to the nearest 100 and
       -- capped at 14,600: 147 buckets 0, 100, ..., 14600 (covering rows take every bucket once)
       CAST(100 * coalesce(x.cost_rank - 1,
                           least($d_cost - 1, round(p.value * (0.5 + x.cost_u) / 100.0))) AS INTEGER) AS cost
FROM draws x
JOIN ls_dom_zipcode z ON z.rank = x.zipcode_rank
JOIN ls_dom_order_date d ON d.rank = x.order_date_rank
JOIN ls_dom_gender g ON g.rank = x.gender_rank
JOIN ls_dom_style st ON st.rank = x.style_rank
JOIN ls_dom_price p ON p.rank = x.price_rank
JOIN ls_dom_quantity q ON q.rank = 1
JOIN ls_dom_shipment sh ON sh.rank = x.shipment_rank
ORDER BY x.r;

-- name: cleanup
DROP TABLE IF EXISTS ls_dom_zipcode;
DROP TABLE IF EXISTS ls_dom_order_date;
DROP TABLE IF EXISTS ls_dom_gender;
DROP TABLE IF EXISTS ls_dom_style;
DROP TABLE IF EXISTS ls_dom_price;
DROP TABLE IF EXISTS ls_dom_quantity;
DROP TABLE IF EXISTS ls_dom_shipment;

-- name: hierarchy_zipcode
-- round (mask) one more digit per level: 53703 -> 5370* -> 537** -> 53*** -> 5**** -> *
SELECT zipcode, left(zipcode, 4) || '*' AS level_1, left(zipcode, 3) || '**' AS level_2,
       left(zipcode, 2) || '***' AS level_3, left(zipcode, 1) || '****' AS level_4, '*' AS level_5
FROM (SELECT DISTINCT zipcode FROM $table) ORDER BY zipcode

-- name: hierarchy_order_date
-- day -> month -> quarter -> *
SELECT strftime(order_date, '%Y-%m-%d') AS order_date, strftime(order_date, '%Y-%m') AS level_1,
       CAST(year(order_date) AS VARCHAR) || '-Q' || CAST(quarter(order_date) AS VARCHAR) AS level_2,
       '*' AS level_3
FROM (SELECT DISTINCT order_date FROM $table) ORDER BY 1

-- name: hierarchy_price
-- round one more digit per level, as intervals [lo, hi) of width 10, 100, 1000 cents, then *
SELECT CAST(v AS VARCHAR) AS price,
       '[' || (v // 10) * 10 || ', ' || (v // 10) * 10 + 10 || ')' AS level_1,
       '[' || (v // 100) * 100 || ', ' || (v // 100) * 100 + 100 || ')' AS level_2,
       '[' || (v // 1000) * 1000 || ', ' || (v // 1000) * 1000 + 1000 || ')' AS level_3,
       '*' AS level_4
FROM (SELECT DISTINCT price AS v FROM $table) ORDER BY v

-- name: hierarchy_suppress
-- value -> *
SELECT CAST(v AS VARCHAR) AS $column, '*' AS level_1
FROM (SELECT DISTINCT $column AS v FROM $table) ORDER BY v
