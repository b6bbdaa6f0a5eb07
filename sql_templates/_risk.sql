{# Re-identification risk: the equivalence classes of a relation (shared, never run on its own).
   keys: one per quasi-identifier, {column, map_table, level}: the column as it is (map_table None) or
   its hierarchy label at `level` through the mapping table. One row per class: its labels k0.. and size
   (distinct persons with an entity key). #}
{% macro risk_classes(relation, keys, entity) -%}
SELECT
{% for k in keys %}
    {% if k.map_table %}m{{ loop.index0 }}.{{ ('l%d' % k.level) | ident }}{% else %}src.{{ k.column | ident }}{% endif %} AS {{ ('k%d' % loop.index0) | ident }},
{% endfor %}
    {% if entity %}COUNT(DISTINCT src.{{ entity | ident }}){% else %}COUNT(*){% endif %} AS "size"
FROM {{ relation | relation }} AS src
{% for k in keys %}
{% if k.map_table %}
JOIN {{ k.map_table | ident }} AS m{{ loop.index0 }}
  ON m{{ loop.index0 }}."value" = CAST(src.{{ k.column | ident }} AS VARCHAR)
{% endif %}
{% endfor %}
GROUP BY {% for k in keys %}{% if k.map_table %}m{{ loop.index0 }}.{{ ('l%d' % k.level) | ident }}{% else %}src.{{ k.column | ident }}{% endif %}{% if not loop.last %}, {% endif %}{% endfor %}
{%- endmacro %}
