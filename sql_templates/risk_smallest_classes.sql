{# The smallest classes of a relation (the riskiest under the prosecutor model), with their labels. #}
{% from "_risk.sql" import risk_classes %}
SELECT {% for k in keys %}{{ ('k%d' % loop.index0) | ident }}, {% endfor %}"size"
FROM ({{ risk_classes(relation, keys, entity) }}) AS cls
ORDER BY "size"{% for k in keys %}, {{ ('k%d' % loop.index0) | ident }}{% endfor %}

LIMIT {{ limit | int }}
