{# The release catalog (sqlanon.catalog): one row per object a release wrote, appended, never updated.
   Column names are fixed by sqlanon; `name` is the table/view name, or the absolute path of an export. #}
CREATE TABLE IF NOT EXISTS {{ name | ident }} (
{% for col, type in columns %}
    {{ col | ident }} {{ type | sqltype }}{% if not loop.last %},{% endif %}

{% endfor %}
)
