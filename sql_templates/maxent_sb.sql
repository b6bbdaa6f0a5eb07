{# Privacy-MaxEnt SA-invariants (Section 5.2, Eq. 5): per bucket b and sensitive value s in SA(b), the
   count n(s, b) = N * P(s, b), the right-hand side of sum_q P(q, s, b) = P(s, b). A value is found by its
   own type (the map's "typed"), not its text. #}
CREATE OR REPLACE TEMPORARY TABLE {{ out | ident }} AS
SELECT bk."b", sm."code" AS "s", SUM(st."count") AS "n"
FROM {{ st | ident }} AS st
JOIN {{ buckets | ident }} AS bk ON bk."label" = st."bucket"
JOIN {{ smap | ident }} AS sm ON sm."typed" = st.{{ sensitive | ident }}
WHERE st."count" > 0
GROUP BY bk."b", sm."code"
