{# The wide frequency set: the bottom one with every level's code joined on (q{i}_{j} = attribute i
   at level j), so that any lattice node is one GROUP BY over it, without joins. With `view`, a view
   computed when read (Spark, when the search counts on a copy of the frequency set in the driver). Codes
   are stored in `code_types` (column -> engine type, or none: as the mapping tables hold them). With
   `cluster_by` (`FrequencySet.cluster_order`) the rows are written in that order, so that a node's blocks
   are runs of rows and the hash aggregation of each node query finds its groups near each other: at 100 M
   rows of Lands End the search took 262.6 s instead of 323.8 s, the sort included (paired, one run each;
   benchmarks/RESULTS-rows.md). Columns in `omit` are not written (`FrequencySet.constant_columns`: levels whose
   code is 0 for every value; `wide_constants_view.sql` adds them back). With `bottom` (the bottom frequency
   set's `source` and `joins`: `FrequencySet.reads_source_directly`) the bottom set is not a table but this
   statement's subquery, grouped straight from the source (macro `bottom_select`): one statement instead of
   three tables written (the staged source, the bottom set, the wide set). #}
{% from "_macros.sql" import bottom_select, code %}
{% set code_types = code_types | default({}) %}
{% set omit = omit | default([]) %}
CREATE OR REPLACE TEMPORARY {% if view is defined and view %}VIEW{% else %}TABLE{% endif %} {{ wide | ident }} AS
SELECT
{% for q in qis %}
{% set i = loop.index0 %}
{% for j in range(q.height + 1) if q.col(j) not in omit %}
    {{ code('m%d.%s' % (i, ('c%d' % j) | ident), code_types.get(q.col(j))) }} AS {{ q.col(j) | ident }},
{% endfor %}
{% endfor %}
{% for s in sensitives %}
    fs.{{ s.col | ident }},
{% endfor %}
{% if entity %}
    fs."e",
{% endif %}
    fs."cnt"
{% if bottom is defined and bottom %}
FROM (
{{ bottom_select(qis, sensitives, bottom.source, none, false, entity | default(none), code_types, bottom.joins) }}
) AS fs
{% else %}
FROM {{ fs | ident }} AS fs
{% endif %}
{% for q in qis %}
JOIN {{ q.map_table | ident }} AS m{{ loop.index0 }}
  ON m{{ loop.index0 }}."c0" = fs.{{ ('q%d' % q.index) | ident }}
{% endfor %}
{% if cluster_by is defined and cluster_by %}
ORDER BY {% for c in cluster_by %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% endif %}
