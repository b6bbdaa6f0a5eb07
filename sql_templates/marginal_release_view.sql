{# A released marginal as a view over the source (its mapping tables persisted beside it). #}
CREATE OR REPLACE VIEW {{ name | relation }} AS
{% include "marginal_select.sql" %}
