{# Journalist risk: each sample class matched to the population's class with the same labels (compared
   as text); returns (sample size, population size, number of such classes). A sample class absent from
   the population gets population size 0. A NULL label (a value as it is at the source) matches a NULL.
   With `population_entity` the population's classes count persons, as the table's do with an entity key. #}
{% from "_risk.sql" import risk_classes %}
SELECT s."size" AS "sample_size", COALESCE(p."size", 0) AS "population_size", COUNT(*) AS "classes"
FROM {% if classes %}{{ classes | ident }}{% else %}({{ risk_classes(relation, keys, entity) }}){% endif %} AS s
LEFT JOIN ({{ risk_classes(population, population_keys, population_entity | default(none)) }}) AS p
  ON {% for k in keys %}CAST(s.{{ ('k%d' % loop.index0) | ident }} AS VARCHAR) IS NOT DISTINCT FROM CAST(p.{{ ('k%d' % loop.index0) | ident }} AS VARCHAR){% if not loop.last %} AND {% endif %}{% endfor %}

GROUP BY s."size", COALESCE(p."size", 0)
ORDER BY 1, 2
