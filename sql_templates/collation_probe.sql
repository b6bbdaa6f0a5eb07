{# Binds, returns no rows: a text column compared under a collation other than the binary one (NOCASE,
   NOACCENT, NFC, set on the table or inherited through a view or query) cannot be compared with itself
   under COLLATE C, and DuckDB refuses the statement (`DuckDBBackend.collated_columns`). #}
SELECT {{ column | ident }} = ({{ column | ident }} COLLATE C) FROM {{ relation | relation }} LIMIT 0
