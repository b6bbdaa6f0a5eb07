{# Coverage of a view release (sqlanon/views.py): the live source's rows, and how many of them hold a
   quasi-identifier value missing from its mapping table (released at the hierarchy's top). `qis`:
   (column, mapping table) pairs. #}
SELECT COUNT(*) AS "rows",
       SUM(CASE WHEN {% for col, map in qis %}{% if not loop.first %} OR {% endif %}m{{ loop.index0 }}."value" IS NULL{% endfor %} THEN 1 ELSE 0 END) AS "unknown"
FROM {{ source | relation }} AS src
{% for col, map in qis %}
LEFT JOIN {{ map | relation }} AS m{{ loop.index0 }} ON m{{ loop.index0 }}."value" = CAST(src.{{ col | ident }} AS VARCHAR)
{% endfor %}
