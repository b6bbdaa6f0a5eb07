{# Anatomy (Xiao & Tao, VLDB 2006), step 1: the rows holding each sensitive value (macro `anatomy_values`). #}
{% from "_macros.sql" import anatomy_values %}
SELECT "value", "n"
FROM ({{ anatomy_values(source, sensitive) }}) AS v
ORDER BY 1
