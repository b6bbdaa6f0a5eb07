{# One lattice node as one branch of a batch: per q*-block its size n and the number of distinct values
   of some sensitive attributes (`distinct_cols`: "d_<col>"), tagged with the node's position g in the
   batch (see union_all.sql).
   One distinct count without an entity key is taken in two steps, (block, value) groups first and then
   their number per block, which costs about half of COUNT(DISTINCT). #}
{% from "_macros.sql" import count_of %}
{% set two_level = distinct_cols | length == 1 and not entity %}
SELECT {{ g | int }} AS "g", {{ count_of(entity) }} AS "n"
{% for col in distinct_cols %}
  , {% if two_level %}COUNT(*){% else %}COUNT(DISTINCT {{ col | ident }}){% endif %} AS {{ ('d_%s' % col) | ident }}
{% endfor %}
FROM {% if two_level %}(
    SELECT {% for c in block_cols %}{{ c | ident }}, {% endfor %}{{ distinct_cols[0] | ident }}, SUM("cnt") AS "cnt"
    FROM {{ table | ident }}
    GROUP BY {% for c in block_cols %}{{ c | ident }}, {% endfor %}{{ distinct_cols[0] | ident }}
) AS "t"{% else %}{{ table | ident }}{% endif %}

GROUP BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}
