{# A released marginal as a table, built under a temporary name and swapped in with rename_table.sql. #}
CREATE OR REPLACE TABLE {{ name | relation }} AS
{% include "marginal_select.sql" %}
