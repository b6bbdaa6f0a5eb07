{# Checked SELECTs of the same columns (none with ORDER BY or LIMIT), run as one statement so the
   database can run them in parallel. #}
{% for select in selects %}
{{ select }}
{% if not loop.last %}
UNION ALL
{% endif %}
{% endfor %}
