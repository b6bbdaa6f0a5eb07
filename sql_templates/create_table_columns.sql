{# An empty table with typed columns (types chosen by sqlanon from a frame's dtypes, never by a policy);
   engines without a way to register a frame fill it afterwards (PostgreSQL: copy_from_stdin.sql). #}
CREATE {% if temp %}TEMPORARY {% endif %}TABLE {{ name | relation }} (
{% for col, type in columns %}
    {{ col | ident }} {{ type | sqltype }}{% if not loop.last %},{% endif %}

{% endfor %}
)
