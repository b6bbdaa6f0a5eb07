{# Values of several columns that their mapping tables do not cover (at most a few per column, to name them):
   (column position i, value v). #}
{% from "_macros.sql" import uncovered_texts %}
{% for c in checks %}
SELECT * FROM (
    SELECT DISTINCT {{ loop.index0 | int }} AS "i", u."v" AS "v"
    FROM (
{{ uncovered_texts(source, c.column, c.map_table) }}
    ) AS u
    ORDER BY 2
    LIMIT 5
) AS {{ ('m%d' % loop.index0) | ident }}
{% if not loop.last %}UNION ALL
{% endif %}
{% endfor %}
