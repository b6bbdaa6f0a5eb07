{# A code table of Privacy-MaxEnt (values, buckets) in code order: (value, code). #}
SELECT {{ (value | default('value')) | ident }}, {{ (code | default('code')) | ident }}
FROM {{ map | ident }}
ORDER BY {{ (code | default('code')) | ident }}
