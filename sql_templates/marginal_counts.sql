{# One anonymized marginal (Kifer & Gehrke 2006): the wide frequency set rolled up to the marginal's
   columns (each attribute's code at its level; the sensitive code), one count per cell, in code
   order. With no columns, the table's row count. #}
SELECT
{% for c in cols %}
    {{ c | ident }},
{% endfor %}
    SUM("cnt") AS "n"
FROM {{ table | ident }}
{% if cols %}
GROUP BY {% for c in cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

ORDER BY {% for c in cols %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% endif %}
