{# The smallest classes (the riskiest under the prosecutor model), with their labels. #}
{% from "_risk.sql" import risk_classes %}
SELECT {% for k in keys %}{{ ('k%d' % loop.index0) | ident }}, {% endfor %}"size"
FROM {% if classes %}{{ classes | ident }}{% else %}({{ risk_classes(relation, keys, entity) }}){% endif %} AS cls
ORDER BY "size"{% for k in keys %}, {{ ('k%d' % loop.index0) | ident }}{% endfor %}

LIMIT {{ limit | int }}
