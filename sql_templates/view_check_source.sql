{# What `sqlanon check --table VIEW` reads of a view release (sqlanon/views.py): the view's rows with each
   quasi-identifier as text, NULL (a value unknown to its mapping table at level 0, which the view releases
   at the hierarchy's top) shown as the top label '*'; the sensitive columns as they are. `qis`, `sensitive`:
   column names. #}
SELECT
{% for col in qis %}
    COALESCE(CAST({{ col | ident }} AS VARCHAR), '*') AS {{ col | ident }},
{% endfor %}
{% for col in sensitive %}
    {{ col | ident }}{% if not loop.last %},{% endif %}

{% endfor %}
FROM {{ relation | relation }}
