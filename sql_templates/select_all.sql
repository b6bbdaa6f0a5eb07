{# Every row of a relation (an export streamed in batches, or a test reading a release). #}
SELECT * FROM {{ relation | relation }}
