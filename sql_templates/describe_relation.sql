{# No rows: only the column names and types of a relation. #}
SELECT * FROM {{ relation | relation }} LIMIT 0
