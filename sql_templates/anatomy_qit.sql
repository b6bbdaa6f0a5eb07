{# Anatomy's quasi-identifier table: every kept row's quasi-identifiers as they are, its bucket, and a
   pseudonym (Privacy-MaxEnt Section 6); built under a temporary name, then swapped in. #}
CREATE OR REPLACE TABLE {{ name | ident }} AS
SELECT "pseudonym"{% for c in qis %}, {{ c | ident }}{% endfor %}, "bucket"
FROM {{ assigned | ident }}
ORDER BY "pseudonym"
