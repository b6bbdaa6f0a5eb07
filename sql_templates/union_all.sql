{# Checked SELECTs of the same columns (none with ORDER BY or LIMIT), run as one statement so the
   database can run them in parallel; with `order` (result column names) sorted by them, so the caller
   finds each group's rows as one contiguous run. #}
{% if order %}
SELECT * FROM (
{% endif %}
{% for select in selects %}
{{ select }}
{% if not loop.last %}
UNION ALL
{% endif %}
{% endfor %}
{% if order %}
) AS "u"
ORDER BY {% for c in order %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}
{% endif %}
