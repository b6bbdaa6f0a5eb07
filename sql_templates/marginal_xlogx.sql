{# sum of n ln n over the cells of one marginal (n = rows per cell): the marginal's part of the
   KL-divergence of a decomposable collection (see sqlanon.marginals.estimate.kl_from_marginals), as how many
   cells have each count n (`frequency.xlogx_by_count` adds the terms exactly). #}
SELECT "n", COUNT(*) AS "cells"
FROM (
    SELECT CAST(SUM("cnt") AS BIGINT) AS "n"
    FROM {{ table | ident }}
{% if cols %}
    GROUP BY {% for c in cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% endif %}
) AS "cells"
GROUP BY "n"
