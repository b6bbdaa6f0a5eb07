{# One lattice node as one branch of a batch: per q*-block its size n and the number of distinct values
   of some sensitive attributes (`distinct_cols`: "d_<col>"), tagged with the node's position g in the
   batch (see union_all.sql).
   One distinct count without an entity key is taken in two steps, (block, value) groups first and then
   their number per block, which costs about half of COUNT(DISTINCT).
   With `radix` (each block column's number of codes, their product below 2^62) the blocks are grouped on
   one packed BIGINT key (`packed_key`) instead of their code columns: at 100 M rows of Lands End, the sizes
   of a node of 10 M blocks grouped that way took 4.6 s instead of 5.7 (a bare GROUP BY, in-process, one
   run; the whole search did not change measurably).
   With `key_out` the branch also returns its blocks' key "k": "key" (with `radix`: the packed key, so the
   blocks of a batch's meet can be rolled up to its nodes, `FrequencySet.batch_counts`), "null" (a branch
   beside such a one: NULL). #}
{% from "_macros.sql" import count_of, packed_key %}
{% set two_level = distinct_cols | length == 1 and not entity %}
{% set radix = radix | default(none) %}
{% if radix %}
{% set keys = ['k'] %}
{% else %}
{% set keys = block_cols %}
{% endif %}
{% set key_out = key_out | default(none) %}
SELECT {{ g | int }} AS "g", {{ count_of(entity) }} AS "n"
{% if key_out == "key" %}
  , "k"
{% elif key_out == "null" %}
  , CAST(NULL AS BIGINT) AS "k"
{% endif %}
{% for col in distinct_cols %}
  , {% if two_level %}COUNT(*){% else %}COUNT(DISTINCT {{ col | ident }}){% endif %} AS {{ ('d_%s' % col) | ident }}
{% endfor %}
FROM (
{% if two_level %}
    SELECT {% for c in keys %}{{ c | ident }}, {% endfor %}{{ distinct_cols[0] | ident }}, SUM("cnt") AS "cnt"
    FROM (
{% endif %}
{% set columns = ([packed_key(block_cols, radix) ~ ' AS "k"'] if radix else block_cols | map('ident') | list)
                 + ['"cnt"'] + distinct_cols | map('ident') | list + (['"e"'] if entity else []) %}
        SELECT {{ columns | join(', ') }}
        FROM {{ table | ident }}
{% if two_level %}
    ) AS "keyed"
    GROUP BY {% for c in keys %}{{ c | ident }}, {% endfor %}{{ distinct_cols[0] | ident }}
{% endif %}
) AS "t"
{% if keys %}
GROUP BY {% for c in keys %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% endif %}
