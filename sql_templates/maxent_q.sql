{# Privacy-MaxEnt: every distinct quasi-identifier value q of the release (all attributes together, as in
   the paper's q_1 = {male, college}), numbered 0.., with each attribute's value code a0, a1, ... #}
CREATE OR REPLACE TEMPORARY TABLE {{ out | ident }} AS
SELECT CAST(ROW_NUMBER() OVER (ORDER BY {% for c, m in cols %}{{ ('a%d' % loop.index0) | ident }}{% if not loop.last %}, {% endif %}{% endfor %}) - 1 AS INTEGER) AS "q"
{% for c, m in cols %}
     , {{ ('a%d' % loop.index0) | ident }}
{% endfor %}
FROM (
    SELECT DISTINCT
{% for c, m in cols %}
        m{{ loop.index0 }}."code" AS {{ ('a%d' % loop.index0) | ident }}{% if not loop.last %},{% endif %}

{% endfor %}
    FROM {{ qit | ident }} AS r
{% for c, m in cols %}
    JOIN {{ m | ident }} AS m{{ loop.index0 }} ON m{{ loop.index0 }}."value" = CAST(r.{{ c | ident }} AS VARCHAR)
{% endfor %}
) AS d
