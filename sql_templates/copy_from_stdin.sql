{# PostgreSQL: the rows of a small table (mapping table, suppressed blocks) sent as CSV over the connection. #}
COPY {{ name | relation }} ({% for c in columns %}{{ c | ident }}{% if not loop.last %}, {% endif %}{% endfor %}) FROM STDIN WITH (FORMAT CSV)
