{# One lattice node as one branch of a batch: per q*-block its size n and the count of each sensitive
   value, tagged with the node's position g in the batch (see union_all.sql). #}
{% from "_macros.sql" import count_of, pivot_sums %}
SELECT {{ g | int }} AS "g", {{ count_of(entity) }} AS "n"
{{ pivot_sums(pivots, entity) }}FROM {{ table | ident }}
GROUP BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}
