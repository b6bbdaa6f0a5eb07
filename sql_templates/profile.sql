{# One scan: the row count and the NULLs of each quasi-identifier and sensitive column. With `weight`, the
   source is the staged table (`stage_source.sql`): each row stands for `weight` source rows. #}
{% set weight = weight | default(none) %}
SELECT {% if entity %}COUNT(DISTINCT {{ entity | ident }}){% elif weight %}CAST(COALESCE(SUM({{ weight | ident }}), 0) AS BIGINT){% else %}COUNT(*){% endif %} AS "rows"
{% for c in columns %}
{% if weight %}
     , CAST(COALESCE(SUM(CASE WHEN {{ c | ident }} IS NULL THEN {{ weight | ident }} END), 0) AS BIGINT) AS {{ ('nulls_%d' % loop.index0) | ident }}
{% else %}
     , COUNT(*) - COUNT({{ c | ident }}) AS {{ ('nulls_%d' % loop.index0) | ident }}
{% endif %}
{% endfor %}
FROM {{ source | ident }}
