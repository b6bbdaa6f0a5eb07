{# Privacy-MaxEnt SA-invariants (Section 5.2, Eq. 5): per bucket b and sensitive value s in SA(b), the
   count n(s, b) = N * P(s, b), the right-hand side of sum_q P(q, s, b) = P(s, b). #}
CREATE OR REPLACE TEMPORARY TABLE {{ out | ident }} AS
SELECT bk."b", sm."code" AS "s", SUM(st."count") AS "n"
FROM {{ st | ident }} AS st
JOIN {{ buckets | ident }} AS bk ON bk."label" = st."bucket"
JOIN {{ smap | ident }} AS sm ON sm."value" = CAST(st.{{ sensitive | ident }} AS VARCHAR)
WHERE st."count" > 0
GROUP BY bk."b", sm."code"
