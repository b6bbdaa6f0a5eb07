{# The equivalence classes of a relation as a work table (labels k0.., size), so that the histogram, the
   smallest classes and the population join read one small table instead of grouping the rows again. #}
{% from "_risk.sql" import risk_classes %}
CREATE OR REPLACE TEMPORARY TABLE {{ name | ident }} AS
{{ risk_classes(relation, keys, entity) }}
