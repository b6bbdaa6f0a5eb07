{# A release as a view over the source (its mapping tables persisted beside it). #}
CREATE OR REPLACE VIEW {{ name | relation }} AS
{% include "release_select.sql" %}
