{# PostgreSQL: a relation streamed out as CSV with a header (an export of the release). #}
COPY (SELECT * FROM {{ relation | relation }}) TO STDOUT WITH (FORMAT CSV, HEADER TRUE)
