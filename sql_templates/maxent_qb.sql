{# Privacy-MaxEnt QI-invariants (Section 5.2, Eq. 4): per bucket b and quasi-identifier q in QI(b), the
   count n(q, b) = N * P(q, b), the right-hand side of sum_s P(q, s, b) = P(q, b). With `sensitive`,
   per (b, q, s) instead: the true cell counts of the rows (the truth, for accuracy and rule mining). #}
CREATE OR REPLACE TEMPORARY TABLE {{ out | ident }} AS
SELECT {% if buckets %}bk."b", {% endif %}q."q", {% if sensitive %}sm."code" AS "s", {% endif %}COUNT(*) AS "n"
FROM {{ rows | ident }} AS r
{% if buckets %}
JOIN {{ buckets | ident }} AS bk ON bk."label" = r."bucket"
{% endif %}
{% for c, m in cols %}
JOIN {{ m | ident }} AS m{{ loop.index0 }} ON m{{ loop.index0 }}."value" = CAST(r.{{ c | ident }} AS VARCHAR)
{% endfor %}
JOIN {{ qtable | ident }} AS q ON {% for c, m in cols %}q.{{ ('a%d' % loop.index0) | ident }} = m{{ loop.index0 }}."code"{% if not loop.last %} AND {% endif %}{% endfor %}

{% if sensitive %}
JOIN {{ smap | ident }} AS sm ON sm."typed" = r.{{ sensitive | ident }}
{% endif %}
GROUP BY {% if buckets %}bk."b", {% endif %}q."q"{% if sensitive %}, sm."code"{% endif %}

