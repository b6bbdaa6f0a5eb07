{# Privacy-MaxEnt: the distinct values of one column of a release as text, numbered in code-point order
   (the codes the solver's compact inputs use; knowledge and outputs are translated through this map). #}
CREATE OR REPLACE TEMPORARY TABLE {{ map | ident }} AS
SELECT "value", CAST(ROW_NUMBER() OVER (ORDER BY "value") - 1 AS INTEGER) AS "code"
FROM (SELECT DISTINCT CAST({{ column | ident }} AS VARCHAR) AS "value" FROM {{ relation | ident }}) AS d
