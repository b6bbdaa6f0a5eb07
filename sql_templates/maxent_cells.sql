{# Privacy-MaxEnt's compact solver input (Section 5): one row per cell (b, q, s) with q in QI(b) and s in
   SA(b), carrying n(q, b) and n(s, b). Every cell not listed is a zero-invariant (Eq. 6): P(q, s, b) = 0. #}
SELECT qb."b", qb."q", sb."s", qb."n" AS "nq", sb."n" AS "ns"
FROM {{ qb | ident }} AS qb
JOIN {{ sb | ident }} AS sb ON sb."b" = qb."b"
ORDER BY qb."b", qb."q", sb."s"
