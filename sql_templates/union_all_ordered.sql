{# Checked SELECTs of the same columns run as one statement (as union_all.sql), sorted by the given
   result columns so the caller can find each group's rows as one contiguous run. #}
SELECT * FROM (
{% for select in selects %}
{{ select }}
{% if not loop.last %}
UNION ALL
{% endif %}
{% endfor %}
) AS "u"
ORDER BY {% for c in order %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}
