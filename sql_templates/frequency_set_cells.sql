{# The bottom frequency set's cells (level-0 codes of the quasi-identifiers, sensitive codes, count), fetched
   once when it is small enough to roll node counts up in memory (sqlanon/rollup.py). #}
SELECT
{% for q in qis %}
    {{ ('q%d' % q.index) | ident }},
{% endfor %}
{% for s in sensitives %}
    {{ s.col | ident }},
{% endfor %}
    "cnt"
FROM {{ fs | ident }}
