{# Build the release under a temporary name; `rename_table.sql` swaps it in. #}
CREATE OR REPLACE TABLE {{ name | ident }} AS
{% include "release_select.sql" %}
