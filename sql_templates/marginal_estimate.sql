{# The maximum-entropy estimate of every cell of the original table from a decomposable collection of
   anonymized marginals (Kifer & Gehrke 2006, Theorem 5.1 with Equation 3): the product of the clique
   marginals over the product of the separator marginals (factors with powers +1 / -1, or more when a
   separator repeats), divided by the number of base values each attribute's finest released label
   covers (the mapping tables' n{j}; attributes no marginal holds divide by their domain size).
   The cells are the rows of the wide frequency set (one per original cell); "ln_est" is the
   natural log of the estimated count (|T| times the max-entropy probability). #}
WITH
{% for f in factors %}
{{ f.alias | ident }} AS (
    SELECT {% for c in f.cols %}{{ c | ident }}, {% endfor %}CAST(SUM("cnt") AS DOUBLE) AS "n"
    FROM {{ table | ident }}
{% if f.cols %}
    GROUP BY {% for c in f.cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% endif %}
){% if not loop.last %},{% endif %}

{% endfor %}
SELECT
{% for c in out_cols %}
    w.{{ c | ident }},
{% endfor %}
    CAST(w."cnt" AS DOUBLE) AS "c",
    0.0
{% for f in factors %}
    {{ '+' if f.power > 0 else '-' }} {{ (f.power | abs) | int }} * LN({{ f.alias | ident }}."n")
{% endfor %}
{% for a in areas %}
    - LN({{ a.alias | ident }}.{{ a.ncol | ident }})
{% endfor %}
{% for d in absent %}
    - LN({{ d | int }})
{% endfor %}
    AS "ln_est"
FROM {{ table | ident }} AS w
{% for f in factors %}
JOIN {{ f.alias | ident }} ON {% if f.cols %}{% for c in f.cols %}{{ f.alias | ident }}.{{ c | ident }} = w.{{ c | ident }}{% if not loop.last %} AND {% endif %}{% endfor %}{% else %}TRUE{% endif %}

{% endfor %}
{% for a in areas %}
JOIN {{ a.map | ident }} AS {{ a.alias | ident }} ON {{ a.alias | ident }}."c0" = w.{{ a.col | ident }}
{% endfor %}
