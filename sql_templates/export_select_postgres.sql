{# PostgreSQL: every row of a relation for the Parquet export (`postgres._export_parquet`), each column as it is
   when Parquet has its type, else (`as_text`: an array, uuid, interval, json, a composite...) as PostgreSQL's own
   text of it, the text the CSV export writes. #}
SELECT
{% for c, as_text in columns %}
    {% if as_text %}CAST({{ c | ident }} AS TEXT) AS {{ c | ident }}{% else %}{{ c | ident }}{% endif %}{% if not loop.last %},{% endif %}

{% endfor %}
FROM {{ relation | relation }}
