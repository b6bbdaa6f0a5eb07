{# The generalizing SELECT of a release: each quasi-identifier replaced by its label at the chosen level
   (the original value at level 0), other released columns copied, suppressed blocks left out. This is
   the statement `sqlanon sql` prints for pasting into a scheduled query. #}
SELECT
{% for col, qi, lvl in columns %}
{% if qi is none or lvl == 0 %}
    src.{{ col | ident }}{% if not loop.last %},{% endif %}

{% else %}
    m{{ qi.index }}.{{ ('l%d' % lvl) | ident }} AS {{ col | ident }}{% if not loop.last %},{% endif %}

{% endif %}
{% endfor %}
FROM {{ source | ident }} AS src
{% for col, qi, lvl in columns %}
{% if qi is not none and (lvl > 0 or suppressed) %}
JOIN {{ maps[qi.name] | ident }} AS m{{ qi.index }} ON m{{ qi.index }}."value" = CAST(src.{{ col | ident }} AS VARCHAR)
{% endif %}
{% endfor %}
{% if suppressed %}
WHERE NOT EXISTS (
    SELECT 1 FROM {{ suppressed | ident }} AS sp
    WHERE {% for col, qi, lvl in columns %}{% if qi is not none %}{% if not loop.first %} AND {% endif %}sp.{{ qi.col(lvl) | ident }} = m{{ qi.index }}.{{ ('c%d' % lvl) | ident }}{% endif %}{% endfor %}

)
{% endif %}
