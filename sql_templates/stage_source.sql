{# The source read once: its rows grouped by the raw values of the columns sqlanon reads (quasi-identifiers,
   sensitive attributes, entity key), with each group's row count in `weight`. NULLs stay (one group
   each) so the profile can name them. Every later step of the preparation (profile, distinct values,
   hierarchy coverage, the bottom frequency set) reads this table instead of the source: one scan of a
   CSV file (its types sniffed once), a Parquet file or a query, however many steps follow. Without `group`
   (an engine whose GROUP BY is a shuffle: `Backend.stage_groups`) the rows are kept as they are, each of
   weight 1: the same counts, one aggregation fewer. With `view` (Spark, `Backend.stage_view`) a view, which
   `Backend.snapshot` then makes a copy. #}
CREATE OR REPLACE TEMPORARY {% if view | default(false) %}VIEW{% else %}TABLE{% endif %} {{ name | ident }} AS
SELECT
{% for c in columns %}
    {{ c | ident }},
{% endfor %}
{% if group %}
    COUNT(*) AS {{ weight | ident }}
FROM {{ source | relation }}
GROUP BY
{% for c in columns %}
    {{ c | ident }}{% if not loop.last %},{% endif %}

{% endfor %}
{% else %}
    CAST(1 AS BIGINT) AS {{ weight | ident }}
FROM {{ source | relation }}
{% endif %}
