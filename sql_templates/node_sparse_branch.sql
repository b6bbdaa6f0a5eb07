{# One lattice node as one branch of a batch, in sparse form: a row per (q*-block, sensitive value
   present in it) with its count, or with no `sens_col` a row per q*-block with its size.

   With `radix` (each block column's number of codes, and last the number of sensitive values) the
   block codes and the value are packed into one BIGINT "key" in mixed radix, which sorts like the
   codes themselves: union_all.sql (with `order`) sorts a batch by (g, key) far faster than by many columns.
   Without it (a key that would not fit 62 bits) the codes come as k0, k1, ... padded with 0 up to
   `width` columns, and the value as "v". Either way a node's blocks come out in the order of
   node_counts.sql. #}
{% from "_macros.sql" import count_of, packed_key %}
SELECT {{ g | int }} AS "g"
{% if radix %}
  , {{ packed_key(block_cols, radix, sens_col, radix[-1]) }} AS "key"
{% else %}
{% for c in block_cols %}
  , {{ c | ident }} AS {{ ('k%d' % loop.index0) | ident }}
{% endfor %}
{% for i in range(block_cols | length, width) %}
  , 0 AS {{ ('k%d' % i) | ident }}
{% endfor %}
{% if sens_col %}
  , {{ sens_col | ident }} AS "v"
{% endif %}
{% endif %}
  , CAST({{ count_of(entity) }} AS BIGINT) AS "n"
FROM {{ table | ident }}
{% if block_cols or sens_col %}
GROUP BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last or sens_col %}, {% endif %}{% endfor %}{% if sens_col %}{{ sens_col | ident }}{% endif %}

{% endif %}
