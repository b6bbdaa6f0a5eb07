{# sum of c ln c over the cells of the original table (the bottom frequency set's cells: level-0
   codes and sensitive values): the part of the KL-divergence that does not depend on the node. Without an
   entity key each of its rows is a cell already (`frequency_set.sql` groups by, or starts from rows
   distinct on, exactly those columns); with one, a cell is the group of its persons' rows. Returned as how many
   cells have each count c, for Python to add the few terms exactly (`frequency.xlogx_by_count`): a SUM of 100 M
   doubles varies in its last digits from run to run. #}
{% from "_macros.sql" import count_of %}
SELECT "c", COUNT(*) AS "cells"
FROM (
{% if entity %}
    SELECT CAST({{ count_of(entity) }} AS BIGINT) AS "c"
    FROM {{ table | ident }}
    GROUP BY {% for q in qis %}{{ ('q%d' % q.index) | ident }}{% if not loop.last or sensitives %}, {% endif %}{% endfor %}{% for s in sensitives %}{{ s.col | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% else %}
    SELECT CAST("cnt" AS BIGINT) AS "c"
    FROM {{ table | ident }}
{% endif %}
) AS cells
GROUP BY "c"
