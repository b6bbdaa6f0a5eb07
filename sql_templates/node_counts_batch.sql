{# Several lattice nodes in one statement: a UNION ALL of their GROUP BYs over the wide frequency set,
   each branch tagged with its position g. Per block: size n and the count of each sensitive value. #}
{% for block_cols in branches %}
{% set g = loop.index0 %}
SELECT {{ g | int }} AS "g", SUM("cnt") AS "n"
{% for col, m in pivots %}
{% for v in range(m) %}
  , SUM(CASE WHEN {{ col | ident }} = {{ v | int }} THEN "cnt" ELSE 0 END) AS {{ ('%s_%d' % (col, v)) | ident }}
{% endfor %}
{% endfor %}
FROM {{ table | ident }}
GROUP BY {% for c in block_cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% if not loop.last %}
UNION ALL
{% endif %}
{% endfor %}
