{# Drop a previous release (kind: TABLE or VIEW; nothing when there is none). #}
{% if kind %}
DROP {{ 'VIEW' if kind == 'VIEW' else 'TABLE' }} IF EXISTS {{ name | relation }}
{% else %}
SELECT 1
{% endif %}
