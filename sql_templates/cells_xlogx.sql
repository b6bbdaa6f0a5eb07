{# sum of c ln c over the cells of the original table (the bottom frequency set's cells: level-0
   codes and sensitive values): the part of the KL-divergence that does not depend on the node. #}
{% from "_macros.sql" import count_of %}
SELECT SUM("c" * LN("c"))
FROM (
    SELECT CAST({{ count_of(entity) }} AS DOUBLE) AS "c"
    FROM {{ table | ident }}
    GROUP BY {% for q in qis %}{{ ('q%d' % q.index) | ident }}{% if not loop.last or sensitives %}, {% endif %}{% endfor %}{% for s in sensitives %}{{ s.col | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

) AS cells
