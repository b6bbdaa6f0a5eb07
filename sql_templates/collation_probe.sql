{# Binds, returns no rows: a text column compared under a collation other than `collation` (NOCASE, NOACCENT,
   NFC, ICU's, set on the table or inherited through a view or query) cannot be compared with itself under
   COLLATE `collation`, and DuckDB refuses the statement. `collation` is one of the binary collation's names
   (C, POSIX, binary: a column declared with one of them binds only with that one;
   `DuckDBBackend.collated_columns`). `steps` reach a text inside a nested column, which keeps the collation of
   the texts it was built from though its type does not show it (`DuckDBBackend._text_paths`): ("item", i) a
   list's or a tuple's i-th item, ("field", name) a struct's field. #}
{% set ns = namespace(e=column | ident) %}
{% for kind, name in steps | default([]) %}
{% if kind == "item" %}{% set ns.e = "(" ~ ns.e ~ ")[" ~ (name | int) ~ "]" %}
{% elif kind == "field" %}{% set ns.e = "(" ~ ns.e ~ ")." ~ (name | ident) %}
{% endif %}
{% endfor %}
SELECT {{ ns.e }} = ({{ ns.e }} COLLATE {{ collation | ident }}) FROM {{ relation | relation }} LIMIT 0
