{# Shared pieces of the node queries (imported, never run on their own). With an entity key the
   frequency sets hold one row per (cell, person) in column "e", and a count is of distinct persons. #}
{% macro count_of(entity) -%}
{% if entity %}COUNT(DISTINCT "e"){% else %}SUM("cnt"){% endif %}
{%- endmacro %}

{% macro pivot_sums(pivots, entity=False) %}
{% for col, m in pivots %}
{% for v in range(m) %}
{% if entity %}
  , COUNT(DISTINCT CASE WHEN {{ col | ident }} = {{ v | int }} THEN "e" END) AS {{ ('%s_%d' % (col, v)) | ident }}
{% else %}
  , SUM(CASE WHEN {{ col | ident }} = {{ v | int }} THEN "cnt" ELSE 0 END) AS {{ ('%s_%d' % (col, v)) | ident }}
{% endif %}
{% endfor %}
{% endfor %}
{% endmacro %}

{# An integer code, cast to the narrow type the engine stores codes in (`Backend.code_type`) when it has one. #}
{% macro code(expr, type) -%}
{% if type %}CAST({{ expr }} AS {{ type | sqltype }}){% else %}{{ expr }}{% endif %}
{%- endmacro %}

{# Block codes packed into one BIGINT in mixed radix (`radix[i]`: how many codes column i has; their product,
   times `last` when a last column is packed too, below 2^62): ((c0 * r1 + c1) * r2 + c2) ... It sorts like
   the codes themselves, and one key column groups faster than several. `alias` qualifies the columns. #}
{% macro packed_key(cols, radix, last=none, last_radix=1, alias=none) -%}
{% set q = (alias | ident) ~ "." if alias else "" %}
{% for c in cols %}({% endfor %}CAST(0 AS BIGINT){% for c in cols %} * {{ radix[loop.index0] | int }} + CAST({{ q }}{{ c | ident }} AS BIGINT)){% endfor %}{% if last %} * {{ last_radix | int }} + CAST({{ q }}{{ last | ident }} AS BIGINT){% endif %}
{%- endmacro %}

{# The per-node row of a verdict query (`checker.NodeStats`), over a relation of its classes with their
   size "n" and whether they are kept, "ok" (node_verdict_branch.sql, node_verdict_grouped_branch.sql).
   Squares are summed exactly: in BIGINT while the table's rows N allow it (every sum of squares is at most
   N^2, `FrequencySet.wide_squares`), else in DECIMAL(38, 0) (`wide_squares`). A BIGINT square past 2^63
   stops DuckDB's grouped verdict with `packed` (its n is a CAST of a SUM to BIGINT; DuckDB's other sizes are
   HUGEINT sums) and every form on Spark (its SUM of BIGINT stays BIGINT; a wrapped number without ANSI mode). #}
{% macro verdict_columns(g, wide_squares=false) -%}
{% set square = 'DECIMAL(38, 0)' if wide_squares else 'BIGINT' %}
{{ g | int }} AS "g"
  , COUNT(*) AS "classes"
  , SUM(CAST("n" AS {{ square }}) * "n") AS "sum_sq"
  , MIN("n") AS "min_size"
  , SUM(CASE WHEN "ok" THEN 0 ELSE "n" END) AS "suppressed"
  , SUM(CASE WHEN "ok" THEN 1 ELSE 0 END) AS "kept_classes"
  , SUM(CASE WHEN "ok" THEN CAST("n" AS {{ square }}) * "n" ELSE 0 END) AS "kept_sum_sq"
{%- endmacro %}

{# Does a block pass the verdict query's tests (`checker.NodeChecker.verdict_thresholds`)? `n`, `d`, `xl`: SQL
   for its rows, its distinct values (or groups of values) and the sum over those of c ln c; entropy is
   ln n - xl / n (TKDD Def. 4.1), tested unless `entropy` is None. #}
{% macro block_passes(n, d, xl, min_size, min_distinct, entropy) -%}
({{ n }} >= {{ min_size | int }} AND {{ d }} >= {{ min_distinct | int }}
{%- if entropy is not none %} AND LN({{ n }}) - {{ xl }} / {{ n }} >= {{ entropy | num }}{% endif %})
{%- endmacro %}

{# How a source column finds its row of a mapping table (`map`: its relation, already quoted; "value" holds
   each base value as text), joined as `alias`; `column` is the source column's SQL. `how`
   (`dialects.map_joins`):
   - "text", a text column: joined as it is;
   - an integer or date type: joined on the mapping table's values cast to that type, NULL (matching
     nothing) for a value that is not its own canonical text (CAST(TRY_CAST(value) AS VARCHAR) = value):
     exactly the rows the text join matches, one mapping row each, with the casts on the small side;
   - none: the source value cast to text, a cast per source row (at 100 M rows of Lands End about 2 s per
     integer or date column, against 0.2 s typed: benchmarks/RESULTS-rows.md).
   The typed form drops its non-canonical values by a CASE, not a WHERE: DuckDB estimates a filtered
   mapping table at about one row, then builds its hash tables on the source's side of the later joins
   (out of memory at 100 M rows). #}
{% macro map_join(join, map, alias, column, how) -%}
{% if how == "text" -%}
{{ join }} {{ map }} AS {{ alias }} ON {{ alias }}."value" = {{ column }}
{%- elif how -%}
{{ join }} (SELECT mt.*, CASE WHEN CAST(TRY_CAST(mt."value" AS {{ how | sqltype }}) AS VARCHAR) = mt."value"
                      THEN TRY_CAST(mt."value" AS {{ how | sqltype }}) END AS "__sqlanon_tv"
               FROM {{ map }} AS mt) AS {{ alias }}
        ON {{ alias }}."__sqlanon_tv" = {{ column }}
{%- else -%}
{{ join }} {{ map }} AS {{ alias }} ON {{ alias }}."value" = CAST({{ column }} AS VARCHAR)
{%- endif %}
{%- endmacro %}

{# The bottom frequency set's SELECT (frequency_set.sql, which documents it): the level-0 code of every
   quasi-identifier, the code of every sensitive value (and the person, with `entity`) and the count, read
   from `source` (the staged table with its `weight` column, or the source itself) joined to the mapping
   tables. Also the subquery of the wide frequency set written straight from the source
   (wide_frequency_set.sql with `bottom`). #}
{# A text with its ASCII letters lower-cased, the others as they are: how DuckDB compares names (lower() would
   also fold É to é, which DuckDB holds apart). #}
{% macro ascii_lower(expr) -%}
translate({{ expr }}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
{%- endmacro %}

{# The texts of a column's non-NULL values, one row per source row, that `table` (column "value") does not list:
   an anti-join on the text. Not a NOT EXISTS correlated on the column: DuckDB decorrelates that by grouping the
   column's values first, so the rows of -0.0 of a DOUBLE took the verdict of 0.0 (equal values) and went
   unreported, though the frequency set's join on the text dropped them. #}
{% macro uncovered_texts(source, column, table) -%}
SELECT t."v"
FROM (SELECT CAST({{ column | ident }} AS VARCHAR) AS "v" FROM {{ source | relation }} WHERE {{ column | ident }} IS NOT NULL) AS t
LEFT JOIN {{ table | ident }} AS known ON known."value" = t."v"
WHERE known."value" IS NULL
{%- endmacro %}

{% macro bottom_select(qis, sensitives, source, weight, distinct_rows, entity, code_types, joins) -%}
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
FROM {{ source | relation }} AS src
{% for q in qis %}
{{ map_join("JOIN", q.map_table | ident, "m%d" % loop.index0, "src." ~ (q.name | ident), joins.get(q.name)) }}
{% endfor %}
{% for s in sensitives %}
{{ map_join("JOIN", s.map_table | ident, "sm%d" % loop.index0, "src." ~ (s.name | ident), joins.get(s.name)) }}
{% endfor %}
{% if not distinct_rows %}
GROUP BY
{% for q in qis %}
    m{{ loop.index0 }}."c0"{% if not loop.last or sensitives or entity %},{% endif %}

{% endfor %}
{% for s in sensitives %}
    sm{{ loop.index0 }}."code"{% if not loop.last or entity %},{% endif %}

{% endfor %}
{% if entity %}
    src.{{ entity | ident }}
{% endif %}
{% endif %}
{%- endmacro %}

{# Anatomy's sensitive values (anatomy_value_counts.sql, anatomy_assign.sql): one row per value of the column's
   own type, so that equal values written apart (0.0 and -0.0 of a float) are one value, as the engine groups them
   and as the privacy models count them (`FrequencySet._value_classes`); "value" names it by the least of its
   texts, "typed" joins it back to its rows, "n" counts them. #}
{% macro anatomy_values(source, sensitive) -%}
SELECT {{ sensitive | ident }} AS "typed", MIN(CAST({{ sensitive | ident }} AS VARCHAR)) AS "value", COUNT(*) AS "n"
FROM {{ source | ident }}
GROUP BY {{ sensitive | ident }}
{%- endmacro %}

{# A sum of DOUBLE terms that is the same in every run: each term rounded to DECIMAL(38, 20) and added exactly,
   so the engine's order of adding (which a parallel aggregate varies from run to run) cannot change the last
   digits. 1e-20 is below a double's resolution at 1e-4; a term under 5e-21 counts 0. Terms and sums must be
   finite and below 1e18 in magnitude: past that DuckDB and PostgreSQL stop with an error, Spark gives NULL
   (a NaN or an infinity even in ANSI mode). Privacy-MaxEnt's terms stay far inside: probabilities, their
   entropies, and record counts times those. #}
{% macro exact_sum(expr) -%}
CAST(SUM(CAST({{ expr }} AS DECIMAL(38, 20))) AS DOUBLE)
{%- endmacro %}
