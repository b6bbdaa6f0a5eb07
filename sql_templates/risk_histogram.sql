{# The class-size histogram: size -> number of classes of that size, over the classes work table
   (risk_classes_table.sql) or, without one, over the classes' GROUP BY of the relation. Every prosecutor
   risk figure is a function of it. #}
{% from "_risk.sql" import risk_classes %}
SELECT "size", COUNT(*) AS "classes"
FROM {% if classes %}{{ classes | ident }}{% else %}({{ risk_classes(relation, keys, entity) }}){% endif %} AS cls
GROUP BY "size"
ORDER BY "size"
