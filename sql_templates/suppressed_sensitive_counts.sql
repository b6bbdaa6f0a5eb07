{# Rows of the suppressed blocks per combination of sensitive values: the root cell of the KL metric; with an
   entity key their (person, original cell) pairs, the wide frequency set's rows. #}
SELECT {% if entity %}COUNT(*){% else %}SUM(w."cnt"){% endif %}
FROM {{ table | ident }} AS w
WHERE EXISTS (SELECT 1 FROM {{ suppressed | ident }} AS sp
              WHERE {% for c in suppressed_cols %}sp.{{ c | ident }} = w.{{ c | ident }}{% if not loop.last %} AND {% endif %}{% endfor %})
GROUP BY {% for c in sens_cols %}w.{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}
