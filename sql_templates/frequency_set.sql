{# The bottom frequency set: one scan of the source, grouped by the level-0 code of every
   quasi-identifier and the code of every sensitive value (TKDD Section 5); with an entity key, by
   the person too. With `weight`, the source is the staged table (`stage_source.sql`) and each of its
   rows counts `weight` source rows. With `distinct_rows`, its rows are already one per distinct
   combination of exactly these columns' raw values (the staged table grouped, without an entity key),
   and mapping each raw value to its level-0 code merges none of them: the rows are mapped and not
   grouped again (on a source where nearly every row is distinct, such a second GROUP BY is as large as
   the source). Codes are stored in `code_types` (column -> engine type, or none: as the mapping tables
   hold them). `joins` (column -> how, `dialects.map_joins`): how each column finds its mapping row
   (macro `map_join`; by default its value cast to text). #}
{% from "_macros.sql" import code, map_join %}
{% set weight = weight | default(none) %}
{% set code_types = code_types | default({}) %}
{% set distinct_rows = distinct_rows | default(false) %}
{% set joins = joins | default({}) %}
CREATE OR REPLACE TEMPORARY TABLE {{ fs | ident }} AS
SELECT
{% for q in qis %}
    {{ code('m%d."c0"' % loop.index0, code_types.get('q%d' % q.index)) }} AS {{ ('q%d' % q.index) | ident }},
{% endfor %}
{% for s in sensitives %}
    {{ code('sm%d."code"' % loop.index0, code_types.get(s.col)) }} AS {{ s.col | ident }},
{% endfor %}
{% if entity %}
    src.{{ entity | ident }} AS "e",
{% endif %}
    {% if distinct_rows %}CAST(src.{{ weight | ident }} AS BIGINT){% elif weight %}CAST(SUM(src.{{ weight | ident }}) AS BIGINT){% else %}COUNT(*){% endif %} AS "cnt"
FROM {{ source | ident }} AS src
{% for q in qis %}
{{ map_join("JOIN", q.map_table | ident, "m%d" % loop.index0, "src." ~ (q.name | ident), joins.get(q.name)) }}
{% endfor %}
{% for s in sensitives %}
{{ map_join("JOIN", s.map_table | ident, "sm%d" % loop.index0, "src." ~ (s.name | ident), joins.get(s.name)) }}
{% endfor %}
{% if not distinct_rows %}
GROUP BY
{% for q in qis %}
    m{{ loop.index0 }}."c0"{% if not loop.last or sensitives %},{% endif %}

{% endfor %}
{% for s in sensitives %}
    sm{{ loop.index0 }}."code"{% if not loop.last or entity %},{% endif %}

{% endfor %}
{% if entity %}
    src.{{ entity | ident }}
{% endif %}
{% endif %}
