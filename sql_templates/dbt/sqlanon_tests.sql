{#- sqlanon's dbt generic tests, written by `sqlanon dbt` (regenerate rather than edit). Each returns the
    equivalence classes of the model (one row per combination of quasi-identifier labels) that break
    one privacy model, so `dbt build` fails as soon as the model stops satisfying the policy:

    sqlanon_k_anonymity   classes with fewer than k rows (persons, with an entity key)
    sqlanon_l_diversity   distinct: fewer than l sensitive values; entropy: -sum p ln p < ln l;
                          recursive (c,l): r1 >= c (r_l + ... + r_m), counts sorted descending
                          (Machanavajjhala et al., "l-Diversity: Privacy Beyond k-Anonymity", TKDD 2007,
                          Sec. 4 and Defs. 4.1, 4.2)
    sqlanon_t_closeness   Earth Mover's Distance between a class's sensitive distribution and the
                          source's above t: equal distance 1/2 sum |p_i - q_i|, ordered distance
                          1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)| over the values in ascending order
                          (Li, Li, Venkatasubramanian, "t-Closeness", ICDE 2007, Sec. 4.2)
    sqlanon_suppression   one row when the model leaves out more source rows than the policy's
                          max_suppression allows (suppressed classes, and values no hierarchy maps)

    A row without a sensitive value is no value of its class: l-diversity and t-closeness count the values a
    class holds (a NULL beside one known value made two distinct ones; a view release withholds such rows).

    A class is a combination of the quasi-identifiers' labels as the model shows them, compared as text
    (`sqlanon_model`): values equal in their type but written apart (-0.0 beside 0.0 of a double at level 0)
    are two classes to a reader, and to sqlanon; grouped by value they were one, and a singleton passed.

    The tolerances are sqlanon's: a strict inequality must hold by a relative 1e-12, and entropy and
    EMD may miss their bound by 1e-12 (floating-point sums). -#}

{% macro sqlanon_column_list(columns, prefix='') -%}
{%- for c in columns %}{{ prefix }}{{ adapter.quote(c) }}{% if not loop.last %}, {% endif %}{% endfor -%}
{%- endmacro %}

{% macro sqlanon_model(model, quasi_identifiers, others, valued=none) -%}
{%- set columns = [] -%}
{%- for c in quasi_identifiers %}{% do columns.append('cast(' ~ adapter.quote(c) ~ ' as ' ~ dbt.type_string() ~ ') as ' ~ adapter.quote(c)) %}{% endfor -%}
{%- for c in others if c %}{% do columns.append(adapter.quote(c)) %}{% endfor -%}
select {{ columns | join(', ') }}
from {{ model }}
{%- if valued %}
where {{ adapter.quote(valued) }} is not null
{%- endif %}
{%- endmacro %}

{% macro sqlanon_count(entity_key) -%}
{%- if entity_key %}count(distinct {{ adapter.quote(entity_key) }}){% else %}count(*){% endif -%}
{%- endmacro %}

{% test sqlanon_k_anonymity(model, quasi_identifiers, k, entity_key=none) %}
with sqlanon_model as ({{ sqlanon_model(model, quasi_identifiers, [entity_key]) }})
select {{ sqlanon_column_list(quasi_identifiers) }}, {{ sqlanon_count(entity_key) }} as sqlanon_class_size
from sqlanon_model
group by {{ sqlanon_column_list(quasi_identifiers) }}
having {{ sqlanon_count(entity_key) }} < {{ k }}
{% endtest %}

{% test sqlanon_l_diversity(model, quasi_identifiers, sensitive, variant, l, c=none, entity_key=none) %}
{%- set qi = sqlanon_column_list(quasi_identifiers) %}
with sqlanon_model as ({{ sqlanon_model(model, quasi_identifiers, [sensitive, entity_key], sensitive) }}
), sqlanon_cells as (
    select {{ qi }}, {{ adapter.quote(sensitive) }} as sqlanon_value,
           cast({{ sqlanon_count(entity_key) }} as double precision) as sqlanon_n
    from sqlanon_model
    group by {{ qi }}, {{ adapter.quote(sensitive) }}
), sqlanon_ranked as (
    select {{ qi }}, sqlanon_n,
           row_number() over (partition by {{ qi }} order by sqlanon_n desc) as sqlanon_rank,
           sum(sqlanon_n) over (partition by {{ qi }}) as sqlanon_total
    from sqlanon_cells
), sqlanon_classes as (
    select {{ qi }},
           count(*) as sqlanon_distinct_values,
           max(sqlanon_n) as sqlanon_top_count,
           sum(case when sqlanon_rank >= {{ l }} then sqlanon_n else 0 end) as sqlanon_tail,
           ln(max(sqlanon_total)) - sum(sqlanon_n * ln(sqlanon_n)) / max(sqlanon_total) as sqlanon_entropy
    from sqlanon_ranked
    group by {{ qi }}
)
select * from sqlanon_classes
{% if variant == 'distinct' %}
where sqlanon_distinct_values < {{ l }}
{% elif variant == 'entropy' %}
where sqlanon_entropy < ln({{ l }}) - 1e-12
{% elif variant == 'recursive' %}
where {{ l }} > 1 and not (sqlanon_top_count < {{ c }} * sqlanon_tail * (1 - 1e-12))
{% else %}
{{ exceptions.raise_compiler_error("sqlanon_l_diversity: variant must be distinct, entropy or recursive; got " ~ variant) }}
{% endif %}
{% endtest %}

{% test sqlanon_t_closeness(model, quasi_identifiers, sensitive, t, distance, source_relation, entity_key=none) %}
{%- set qi = sqlanon_column_list(quasi_identifiers) %}
{%- set s = adapter.quote(sensitive) %}
with sqlanon_whole as (
    select {{ s }} as sqlanon_value, cast({{ sqlanon_count(entity_key) }} as double precision) as sqlanon_n
    from {{ source_relation }}
    where {{ s }} is not null
    group by {{ s }}
), sqlanon_q as (
    select sqlanon_value, sqlanon_n / sum(sqlanon_n) over () as sqlanon_q,
           row_number() over (order by sqlanon_value) as sqlanon_pos,
           count(*) over () as sqlanon_m
    from sqlanon_whole
), sqlanon_model as ({{ sqlanon_model(model, quasi_identifiers, [sensitive, entity_key], sensitive) }}
), sqlanon_cells as (
    select {{ qi }}, {{ s }} as sqlanon_value, cast({{ sqlanon_count(entity_key) }} as double precision) as sqlanon_n
    from sqlanon_model
    group by {{ qi }}, {{ s }}
), sqlanon_classes as (
    select {{ qi }}, sum(sqlanon_n) as sqlanon_total
    from sqlanon_cells
    group by {{ qi }}
), sqlanon_grid as (
    select {{ sqlanon_column_list(quasi_identifiers, 'sqlanon_classes.') }}, sqlanon_q.sqlanon_pos, sqlanon_q.sqlanon_m,
           coalesce(sqlanon_cells.sqlanon_n, 0) / sqlanon_classes.sqlanon_total - sqlanon_q.sqlanon_q as sqlanon_diff
    from sqlanon_classes
    cross join sqlanon_q
    left join sqlanon_cells
      on sqlanon_cells.sqlanon_value = sqlanon_q.sqlanon_value
    {%- for c in quasi_identifiers %}
     and sqlanon_cells.{{ adapter.quote(c) }} = sqlanon_classes.{{ adapter.quote(c) }}
    {%- endfor %}
{% if distance == 'equal' %}
), sqlanon_emd as (
    select {{ qi }}, 0.5 * sum(abs(sqlanon_diff)) as sqlanon_emd
    from sqlanon_grid
    group by {{ qi }}
{% elif distance == 'ordered' %}
), sqlanon_running as (
    select {{ qi }}, sqlanon_m,
           sum(sqlanon_diff) over (partition by {{ qi }} order by sqlanon_pos
                                   rows between unbounded preceding and current row) as sqlanon_cumulative
    from sqlanon_grid
), sqlanon_emd as (
    select {{ qi }},
           case when max(sqlanon_m) > 1 then sum(abs(sqlanon_cumulative)) / (max(sqlanon_m) - 1) else 0 end as sqlanon_emd
    from sqlanon_running
    group by {{ qi }}
{% else %}
{{ exceptions.raise_compiler_error("sqlanon_t_closeness: distance must be equal or ordered; got " ~ distance) }}
{% endif %}
)
select * from sqlanon_emd
where sqlanon_emd > {{ t }} + 1e-12
{% endtest %}

{% test sqlanon_suppression(model, source_relation, max_suppression, entity_key=none) %}
with sqlanon_counts as (
    select (select {{ sqlanon_count(entity_key) }} from {{ source_relation }}) as sqlanon_source_rows,
           (select {{ sqlanon_count(entity_key) }} from {{ model }}) as sqlanon_released_rows
)
select sqlanon_source_rows, sqlanon_released_rows,
       floor({{ max_suppression }} * sqlanon_source_rows + 1e-9) as sqlanon_budget
from sqlanon_counts
where sqlanon_source_rows - sqlanon_released_rows > floor({{ max_suppression }} * sqlanon_source_rows + 1e-9)
{% endtest %}
