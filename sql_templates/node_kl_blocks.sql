{# With an entity key, the KL-divergence weighs (person, original cell) pairs, one row of the wide frequency set
   each (it groups the rows by their cell and person): per block the node releases, its codes and its pairs,
   for the term sum over blocks of pairs(B) ln area(B) (`metrics.kl_divergence`); the total of pairs too. #}
SELECT {% for c in block_cols %}w.{{ c | ident }}, {% endfor %}COUNT(*) AS "pairs"
FROM {{ table | ident }} AS w
{% if suppressed %}
WHERE NOT EXISTS (SELECT 1 FROM {{ suppressed | ident }} AS sp
                  WHERE {% for c in block_cols %}sp.{{ c | ident }} = w.{{ c | ident }}{% if not loop.last %} AND {% endif %}{% endfor %})
{% endif %}
GROUP BY {% for c in block_cols %}w.{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}
