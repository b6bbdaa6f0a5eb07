{# Build the release under a temporary name; `rename_table.sql` swaps it in. With `weight`, `source` is
   the staged source (`stage_source.sql`: one row per distinct combination of the columns read, with its
   row count in `weight`): the generalizing SELECT runs over those few rows, and each result row is then
   repeated `weight` times, so the table holds exactly the rows (and column types) the SELECT over the
   source gives, in another order, without a second read of the source. #}
{% set weight = weight | default(none) %}
CREATE OR REPLACE TABLE {{ name | relation }} AS
{% if weight %}
SELECT
{% for col, qi, lvl in columns %}
    g.{{ col | ident }}{% if not loop.last %},{% endif %}

{% endfor %}
FROM (
{% include "release_select.sql" %}
) AS g, range(g.{{ weight | ident }})
{% else %}
{% include "release_select.sql" %}
{% endif %}
