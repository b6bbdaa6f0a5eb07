{# The generalizing SELECT of a release: each quasi-identifier replaced by its label at the chosen level
   (the original value at level 0), other released columns copied, suppressed blocks left out. This is
   the statement `sqlanon sql` prints for pasting into a scheduled query. Suppressed blocks come either
   from a table of their codes (`suppressed`, as the release runs) or, for a self-contained statement,
   inline (`suppressed_codes`: rows of integer codes, one column per quasi-identifier). The suppression
   conditions loop over the quasi-identifiers only (`loop.first` of the filtered loop), since a kept or
   sensitive column may come first in source order. With `weight` (the staged source's row-count column,
   `release_table.sql`) that column is selected too. `joins` (column -> how, `dialects.map_joins`): how each
   generalized column finds its mapping row (macro `map_join`; by default its value cast to text, as the
   printed statement does: it may run on another engine, over other column types). #}
{% from "_macros.sql" import map_join %}
{% set joins = joins | default({}) %}
SELECT
{% for col, qi, lvl in columns %}
{% if qi is none or lvl == 0 %}
    src.{{ col | ident }}{% if not loop.last %},{% endif %}

{% else %}
    m{{ qi.index }}.{{ ('l%d' % lvl) | ident }} AS {{ col | ident }}{% if not loop.last %},{% endif %}

{% endif %}
{% endfor %}
{% if weight | default(none) %}
    , src.{{ weight | ident }}
{% endif %}
FROM {{ source | relation }} AS src
{% for col, qi, lvl in columns %}
{% if qi is not none and (lvl > 0 or suppressed or suppressed_codes) %}
{{ map_join("JOIN", maps[qi.name] | relation, "m%d" % qi.index, "src." ~ (col | ident), joins.get(col)) }}
{% endif %}
{% endfor %}
{% if suppressed or suppressed_codes %}
WHERE NOT EXISTS (
{% if suppressed %}
    SELECT 1 FROM {{ suppressed | relation }} AS sp
{% else %}
    SELECT 1 FROM (VALUES {% for row in suppressed_codes %}({% for v in row %}{{ v | int }}{% if not loop.last %}, {% endif %}{% endfor %}){% if not loop.last %}, {% endif %}{% endfor %})
        AS sp({% for col, qi, lvl in columns if qi is not none %}{% if not loop.first %}, {% endif %}{{ qi.col(lvl) | ident }}{% endfor %})
{% endif %}
    WHERE {% for col, qi, lvl in columns if qi is not none %}{% if not loop.first %} AND {% endif %}sp.{{ qi.col(lvl) | ident }} = m{{ qi.index }}.{{ ('c%d' % lvl) | ident }}{% endfor %}

)
{% endif %}
