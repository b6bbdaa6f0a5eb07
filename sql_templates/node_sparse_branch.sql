{# One lattice node as one branch of a batch, in sparse form: a row per (q*-block, sensitive value
   present in it) with its count, or with no `sens_col` a row per q*-block with its size. The block's
   codes are returned as k0, k1, ... padded with 0 up to `width` columns, so every branch of a batch
   has the same columns; union_all_ordered.sql sorts the batch by (g, k0, k1, ..., v), which puts a
   node's blocks in the same order as node_counts.sql does. #}
{% from "_macros.sql" import count_of %}
SELECT {{ g | int }} AS "g"
{% for c in block_cols %}
  , {{ c | ident }} AS {{ ('k%d' % loop.index0) | ident }}
{% endfor %}
{% for i in range(block_cols | length, width) %}
  , 0 AS {{ ('k%d' % i) | ident }}
{% endfor %}
{% if sens_col %}
  , {{ sens_col | ident }} AS "v"
{% endif %}
  , CAST({{ count_of(entity) }} AS BIGINT) AS "n"
FROM {{ table | ident }}
{% if block_cols or sens_col %}
GROUP BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last or sens_col %}, {% endif %}{% endfor %}{% if sens_col %}{{ sens_col | ident }}{% endif %}

{% endif %}
