{# The original records of a bucketized release, for its owner: the quasi-identifier table joined with the
   private pseudonym -> sensitive value link (both written by `sqlanon bucketize`). #}
CREATE OR REPLACE TEMPORARY TABLE {{ out | ident }} AS
SELECT {% for c in qis %}r.{{ c | ident }}, {% endfor %}p.{{ sensitive | ident }}
FROM {{ qit | ident }} AS r
JOIN {{ private | ident }} AS p ON p."pseudonym" = r."pseudonym"
