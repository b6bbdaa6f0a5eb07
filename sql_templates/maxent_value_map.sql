{# Privacy-MaxEnt: the distinct values of one column of a release as text, numbered in code-point order
   (the codes the solver's compact inputs use; knowledge and outputs are translated through this map).
   With `typed` (the sensitive column): one row per value of the column's own type, named by its least text,
   with the value itself ("typed", what the rows join on): texts of one value (0.0 and -0.0 of a float) are one
   value, as the privacy models count them (`frequency.equal_value_classes`). #}
CREATE OR REPLACE TEMPORARY TABLE {{ map | ident }} AS
{% if typed %}
SELECT MIN(CAST({{ column | ident }} AS VARCHAR)) AS "value", {{ column | ident }} AS "typed",
       CAST(ROW_NUMBER() OVER (ORDER BY MIN(CAST({{ column | ident }} AS VARCHAR))) - 1 AS INTEGER) AS "code"
FROM {{ relation | ident }}
GROUP BY {{ column | ident }}
{% else %}
SELECT "value", CAST(ROW_NUMBER() OVER (ORDER BY "value") - 1 AS INTEGER) AS "code"
FROM (SELECT DISTINCT CAST({{ column | ident }} AS VARCHAR) AS "value" FROM {{ relation | ident }}) AS d
{% endif %}
