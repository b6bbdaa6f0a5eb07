{# One lattice node as one branch of a batch: per q*-block its size n and the count of each sensitive
   value, tagged with the node's position g in the batch (see union_all.sql). #}
SELECT {{ g | int }} AS "g", SUM("cnt") AS "n"
{% for col, m in pivots %}
{% for v in range(m) %}
  , SUM(CASE WHEN {{ col | ident }} = {{ v | int }} THEN "cnt" ELSE 0 END) AS {{ ('%s_%d' % (col, v)) | ident }}
{% endfor %}
{% endfor %}
FROM {{ table | ident }}
GROUP BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}
