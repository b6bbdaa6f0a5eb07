{# sum of n ln n over the cells of one marginal (n = rows per cell): the marginal's part of the
   KL-divergence of a decomposable collection (see sqlanon.marginals.estimate.kl_from_marginals). #}
SELECT SUM("n" * LN("n"))
FROM (
    SELECT CAST(SUM("cnt") AS DOUBLE) AS "n"
    FROM {{ table | ident }}
{% if cols %}
    GROUP BY {% for c in cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% endif %}
) AS "cells"
