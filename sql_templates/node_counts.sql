{# One lattice node: roll the (wide) frequency set up to the node's levels and return, per q*-block,
   its codes, its size and the count of each sensitive value (a dense row: one column per value code),
   blocks in code order so that two queries of one node line up. #}
{% from "_macros.sql" import count_of, pivot_sums %}
SELECT
{% for c in block_cols %}
    {{ c | ident }},
{% endfor %}
    {{ count_of(entity) }} AS "n"
{{ pivot_sums(pivots, entity) }}FROM {{ table | ident }}
{% if block_cols %}
GROUP BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

ORDER BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% endif %}
