{# The class-size histogram of a relation: size -> number of classes of that size (one GROUP BY over
   the classes' GROUP BY). Every prosecutor risk figure is a function of it. #}
{% from "_risk.sql" import risk_classes %}
SELECT "size", COUNT(*) AS "classes"
FROM ({{ risk_classes(relation, keys, entity) }}) AS cls
GROUP BY "size"
ORDER BY "size"
