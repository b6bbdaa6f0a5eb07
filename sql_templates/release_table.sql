{# Build the release under a temporary name; `rename_table.sql` swaps it in. #}
CREATE OR REPLACE TABLE {{ name | relation }} AS
{% include "release_select.sql" %}
