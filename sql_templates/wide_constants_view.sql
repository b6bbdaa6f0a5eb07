{# The wide frequency set as its readers see it: the table written without its constant columns
   (`wide_frequency_set.sql` with `omit`) and those columns as constants, 0 in the engine's code type
   (`constants`: column -> type, or none). The planner folds the constants into each query, so a node query
   over the view reads only the table's columns. At 100 M rows of Lands End the 8 constant columns of 25 (each
   attribute's top level, and quantity, one value) took 6.6 to 9.1 s of the table's 28.4 s write (ad hoc)
   (benchmarks/RESULTS-rows.md). #}
{% from "_macros.sql" import code %}
CREATE OR REPLACE TEMPORARY VIEW {{ name | ident }} AS
SELECT
    "t".*{% for col, type in constants.items() %},
    {{ code('0', type) }} AS {{ col | ident }}{% endfor %}

FROM {{ table | ident }} AS "t"
