{# The link the release breaks, kept by the data owner (never published): pseudonym -> sensitive value.
   Privacy-MaxEnt uses it to measure estimation accuracy and to mine association rules. #}
CREATE OR REPLACE TABLE {{ name | ident }} AS
SELECT "pseudonym", {{ sensitive | ident }}
FROM {{ assigned | ident }}
ORDER BY "pseudonym"
