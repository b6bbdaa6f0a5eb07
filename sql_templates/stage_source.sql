{# The source read once: its rows grouped by the raw values of the columns sqlanon reads (quasi-identifiers,
   sensitive attributes, entity key), with each group's row count in `weight`. NULLs stay (one group
   each) so the profile can name them. Every later step of the preparation (profile, distinct values,
   hierarchy coverage, the bottom frequency set) reads this table instead of the source: one scan of a
   CSV file (its types sniffed once), a Parquet file or a query, however many steps follow. #}
CREATE OR REPLACE TEMPORARY TABLE {{ name | ident }} AS
SELECT
{% for c in columns %}
    {{ c | ident }},
{% endfor %}
    COUNT(*) AS {{ weight | ident }}
FROM {{ source | ident }}
GROUP BY
{% for c in columns %}
    {{ c | ident }}{% if not loop.last %},{% endif %}

{% endfor %}
