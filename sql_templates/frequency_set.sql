{# The bottom frequency set: one scan of the source, grouped by the level-0 code of every
   quasi-identifier and the code of every sensitive value (TKDD Section 5); with an entity key, by
   the person too. With `weight`, the source is the staged table (`stage_source.sql`) and each of its
   rows counts `weight` source rows. With `distinct_rows`, its rows are already one per distinct
   combination of exactly these columns' raw values (the staged table grouped, without an entity key),
   and mapping each raw value to its level-0 code merges none of them: the rows are mapped and not
   grouped again (on a source where nearly every row is distinct, such a second GROUP BY is as large as
   the source). Codes are stored in `code_types` (column -> engine type, or none: as the mapping tables
   hold them). `joins` (column -> how, `dialects.map_joins`): how each column finds its mapping row
   (macro `map_join`; by default its value cast to text). The SELECT is macro `bottom_select`, which the wide
   frequency set also reads as a subquery when it is written straight from the source. #}
{% from "_macros.sql" import bottom_select %}
CREATE OR REPLACE TEMPORARY TABLE {{ fs | ident }} AS
{{ bottom_select(qis, sensitives, source, weight | default(none), distinct_rows | default(false),
                 entity | default(none), code_types | default({}), joins | default({})) }}
