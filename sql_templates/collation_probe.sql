{# Binds, returns no rows: a text column compared under a collation other than `collation` (NOCASE, NOACCENT,
   NFC, ICU's, set on the table or inherited through a view or query) cannot be compared with itself under
   COLLATE `collation`, and DuckDB refuses the statement. `collation` is one of the binary collation's names
   (C, POSIX, binary: a column declared with one of them binds only with that one;
   `DuckDBBackend.collated_columns`). #}
SELECT {{ column | ident }} = ({{ column | ident }} COLLATE {{ collation | ident }}) FROM {{ relation | relation }} LIMIT 0
