{# Values of a column that its mapping table does not cover (at most a few, to name them). #}
{% from "_macros.sql" import uncovered_texts %}
SELECT DISTINCT u."v" AS v
FROM (
{{ uncovered_texts(source, column, map_table) }}
) AS u
ORDER BY 1
LIMIT 5
