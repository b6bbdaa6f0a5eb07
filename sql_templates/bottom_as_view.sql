{# The bottom frequency set as a view over the wide one, once that is built: its columns are the wide
   set's level-0 codes, sensitive codes, persons and counts, so the table (on Lands End at 100 M rows about
   2 GB beside the wide set's 5 GB) is dropped before this runs and every later read of it (sensitive
   totals, sum of c ln c, roll-up) reads the wide set's columns instead. #}
CREATE OR REPLACE TEMPORARY VIEW {{ fs | ident }} AS
SELECT
{% for q in qis %}
    {{ q.col(0) | ident }} AS {{ ('q%d' % q.index) | ident }},
{% endfor %}
{% for s in sensitives %}
    {{ s.col | ident }},
{% endfor %}
{% if entity %}
    "e",
{% endif %}
    "cnt"
FROM {{ wide | ident }}
