{# How many cells of a release just built differ from what the run judged: 0 when the release holds exactly the
   rows the privacy models were checked on. A cell is one combination of the released attributes (each
   quasi-identifier at the chosen node's level, the sensitive values); its count is the release's rows of it
   (or the sum of `count_col`, for a marginal) against the bottom frequency set's (`fs`, what the search
   judged) with its suppressed blocks (`suppressed`: a table of their codes, columns named as the wide set's)
   left out.

   Each attribute is compared in one form on both sides (`attributes`, `release.judged_attributes`):
   - a label (`label`: the mapping table's column l{level}) as its level's code: the release's label through
     the distinct (label, code) pairs of that level (a label names one node of the hierarchy), the judged cells
     through the mapping tables' c{level};
   - a value copied from the source (a quasi-identifier at level 0, a sensitive value) as its code, through its
     mapping table as the frequency set joined it (macro `map_join`, with `joins`);
   - such a value of a type whose equal values may print differently (`type`, `release.compared_type`: 0.0
     and -0.0; 1.5 and 1.50 in a PostgreSQL numeric; '1 day' and '24:00:00' in an interval) as a value of the
     released column's own type: the release's as it is, the judged code's text (one of the mapping table's
     "value"s for it: a sensitive value's code stands for all its texts, `FrequencySet._value_classes`) cast
     back. A quasi-identifier's equal values judged under two codes (0.0 and -0.0 in two classes) are one
     cell here, as they are in the release.
   A value no mapping row holds has no code (NULL) and matches no judged cell, as does a value of its own type
   that no judged code's text gives back. The judged cells are grouped by code first and cast after, so the casts
   read aggregates. #}
{% from "_macros.sql" import map_join %}
{% set joins = joins | default({}) %}
{% macro released_key(a, i) -%}
{% if a.type %}rel.{{ a.name | ident }}{% else %}r{{ i }}.{{ a.code | ident }}{% endif %}
{%- endmacro %}
{% macro judged_cell(a) -%}
{% if a.qi is not none %}j{{ a.qi }}.{{ a.code | ident }}{% else %}fs.{{ a.cell | ident }}{% endif %}
{%- endmacro %}
{% macro judged_key(a, i) -%}
{% if a.type %}CAST({{ ('v%d' % i) | ident }}."value" AS {{ a.type | coltype }}){% else %}jc.{{ ('k%d' % i) | ident }}{% endif %}
{%- endmacro %}
WITH released AS (
    SELECT
{% for a in attributes %}
        {{ released_key(a, loop.index0) }} AS {{ ('a%d' % loop.index0) | ident }},
{% endfor %}
        {% if count_col %}SUM(rel.{{ count_col | ident }}){% else %}COUNT(*){% endif %} AS "n"
    FROM {{ relation | relation }} AS rel
{% for a in attributes %}
{% if a.type %}
{% elif a.label %}
    LEFT JOIN (SELECT DISTINCT {{ a.label | ident }} AS "label", {{ a.code | ident }} FROM {{ a.map | ident }}) AS r{{ loop.index0 }}
        ON r{{ loop.index0 }}."label" = rel.{{ a.name | ident }}
{% else %}
    {{ map_join("LEFT JOIN", a.map | ident, "r%d" % loop.index0, "rel." ~ (a.name | ident), joins.get(a.name)) }}
{% endif %}
{% endfor %}
    GROUP BY {% for a in attributes %}{{ released_key(a, loop.index0) }}{% if not loop.last %}, {% endif %}{% endfor %}

), judged_cells AS (
    SELECT
{% for a in attributes %}
        {{ judged_cell(a) }} AS {{ ('k%d' % loop.index0) | ident }},
{% endfor %}
        SUM(fs."cnt") AS "n"
    FROM {{ fs | ident }} AS fs
{% for q in qis %}
    JOIN {{ q.map_table | ident }} AS j{{ q.index }} ON j{{ q.index }}."c0" = fs.{{ ('q%d' % q.index) | ident }}
{% endfor %}
{% if suppressed %}
    WHERE NOT EXISTS (
        SELECT 1 FROM {{ suppressed | ident }} AS sp
        WHERE {% for q, level in suppressed_levels %}{% if not loop.first %} AND {% endif %}sp.{{ q.col(level) | ident }} = j{{ q.index }}.{{ ('c%d' % level) | ident }}{% endfor %}

    )
{% endif %}
    GROUP BY {% for a in attributes %}{{ judged_cell(a) }}{% if not loop.last %}, {% endif %}{% endfor %}

), judged AS (
    SELECT
{% for a in attributes %}
        {{ judged_key(a, loop.index0) }} AS {{ ('a%d' % loop.index0) | ident }},
{% endfor %}
        SUM(jc."n") AS "n"
    FROM judged_cells AS jc
{% for a in attributes %}
{% if a.type %}
    JOIN (SELECT {{ a.code | ident }}, MIN("value") AS "value" FROM {{ a.map | ident }} GROUP BY {{ a.code | ident }}) AS {{ ('v%d' % loop.index0) | ident }}
        ON {{ ('v%d' % loop.index0) | ident }}.{{ a.code | ident }} = jc.{{ ('k%d' % loop.index0) | ident }}
{% endif %}
{% endfor %}
    GROUP BY {% for a in attributes %}{{ judged_key(a, loop.index0) }}{% if not loop.last %}, {% endif %}{% endfor %}

)
SELECT COUNT(*)
FROM released AS r
FULL OUTER JOIN judged AS j
    ON {% for a in attributes %}{% if not loop.first %} AND {% endif %}r.{{ ('a%d' % loop.index0) | ident }} = j.{{ ('a%d' % loop.index0) | ident }}{% endfor %}

WHERE COALESCE(r."n", -1) <> COALESCE(j."n", -1)
