{# The catalog's rows without the manifests, oldest first (the newest row of a name is the current one). #}
SELECT {% for col in columns %}{{ col | ident }}{% if not loop.last %}, {% endif %}{% endfor %}
FROM {{ name | ident }}
ORDER BY {{ 'seq' | ident }}
