{# Values of a data column that a hierarchy does not list as a base value, with their rows
   (sqlanon hierarchy check; the hierarchy's base values are in a small table, column "value"). #}
{% from "_macros.sql" import uncovered_texts %}
SELECT u."v" AS v, COUNT(*) AS n
FROM (
{{ uncovered_texts(source, column, values_table) }}
) AS u
GROUP BY 1
ORDER BY 1
