{# A self-enforcing view release (sqlanon/views.py, docs/DESIGN.md section 4): the generalizing SELECT
   over the live source, then every row's class (the generalized quasi-identifiers) is measured at read
   time with window aggregates and only rows of classes that satisfy the policy are returned.
   - __sqlanon_g: the generalized rows. A quasi-identifier value missing from its mapping table is
     released at the hierarchy's top label (LEFT JOIN + COALESCE; at level 0 it is released as NULL), so
     new values are counted in a class instead of dropped.
   - per class: n (COUNT), per (class, sensitive value) ns; distinct l = sum of 1/ns; entropy from
     sum of ln(ns) (H = ln n - (sum ns ln ns)/n); recursive (c,l) from the value ranks by ns; equal EMD
     = 1/2 (1 + sum over rows of (|ns/n - q| - q)/ns), q the value's share in the live source.
   - ordered EMD: classes numbered (cid), a grid of classes x the live domain's positions, cumulative
     differences per class (t-closeness paper, Sec. 4.2).
   The policy's numbers arrive through the `num` / `int` filters (views cannot hold bound parameters). #}
{% set Q %}{% for col in qi_cols %}{% if not loop.first %}, {% endif %}{{ col | ident }}{% endfor %}{% endset %}
CREATE OR REPLACE VIEW {{ name | ident }} AS
WITH "__sqlanon_g" AS (
    SELECT
{% for col, qi, lvl in columns %}
{% if qi is none %}
        src.{{ col | ident }}{% if not loop.last %},{% endif %}

{% elif lvl == 0 %}
        CASE WHEN m{{ qi.index }}."value" IS NULL THEN NULL ELSE src.{{ col | ident }} END AS {{ col | ident }}{% if not loop.last %},{% endif %}

{% else %}
        COALESCE(m{{ qi.index }}.{{ ('l%d' % lvl) | ident }}, t{{ qi.index }}."top") AS {{ col | ident }}{% if not loop.last %},{% endif %}

{% endif %}
{% endfor %}
    FROM {{ source | ident }} AS src
{% for col, qi, lvl in columns %}
{% if qi is not none %}
{% if lvl > 0 %}
    CROSS JOIN (SELECT MIN({{ ('l%d' % qi.height) | ident }}) AS "top" FROM {{ maps[qi.name] | ident }}) AS t{{ qi.index }}
{% endif %}
    LEFT JOIN {{ maps[qi.name] | ident }} AS m{{ qi.index }} ON m{{ qi.index }}."value" = CAST(src.{{ col | ident }} AS VARCHAR)
{% endif %}
{% endfor %}
),
"__sqlanon_a" AS (
    SELECT g.*, COUNT(*) OVER (PARTITION BY {{ Q }}) AS "__sqlanon_n"
{% for s in sens %}
        , COUNT(*) OVER (PARTITION BY {{ Q }}, {{ s.col | ident }}) AS {{ ('__sqlanon_ns%d' % s.j) | ident }}
{% if s.t_equal is not none %}
        , COUNT(*) OVER (PARTITION BY {{ s.col | ident }}) AS {{ ('__sqlanon_qn%d' % s.j) | ident }}
{% endif %}
{% endfor %}
{% if needs_total %}
        , COUNT(*) OVER () AS "__sqlanon_total"
{% endif %}
    FROM "__sqlanon_g" AS g
),
"__sqlanon_b" AS (
    SELECT a.*
{% for s in sens %}
{% set ns = '__sqlanon_ns%d' % s.j %}
{% if s.distinct is not none %}
        , SUM(1.0 / {{ ns | ident }}) OVER (PARTITION BY {{ Q }}) AS {{ ('__sqlanon_d%d' % s.j) | ident }}
{% endif %}
{% if s.entropy is not none %}
        , SUM(LN({{ ns | ident }})) OVER (PARTITION BY {{ Q }}) AS {{ ('__sqlanon_xl%d' % s.j) | ident }}
{% endif %}
{% if s.recursive is not none %}
        , MAX({{ ns | ident }}) OVER (PARTITION BY {{ Q }}) AS {{ ('__sqlanon_r1_%d' % s.j) | ident }}
        , DENSE_RANK() OVER (PARTITION BY {{ Q }} ORDER BY {{ ns | ident }} DESC, {{ s.col | ident }}) AS {{ ('__sqlanon_vr%d' % s.j) | ident }}
{% endif %}
{% if s.t_equal is not none %}
        , SUM((ABS(CAST({{ ns | ident }} AS DOUBLE) / "__sqlanon_n" - CAST({{ ('__sqlanon_qn%d' % s.j) | ident }} AS DOUBLE) / "__sqlanon_total")
               - CAST({{ ('__sqlanon_qn%d' % s.j) | ident }} AS DOUBLE) / "__sqlanon_total") / {{ ns | ident }})
              OVER (PARTITION BY {{ Q }}) AS {{ ('__sqlanon_te%d' % s.j) | ident }}
{% endif %}
{% if s.t_ordered is not none %}
        , DENSE_RANK() OVER (ORDER BY {{ s.col | ident }}) AS {{ ('__sqlanon_pos%d' % s.j) | ident }}
{% endif %}
{% endfor %}
{% if ordered %}
        , DENSE_RANK() OVER (ORDER BY {{ Q }}) AS "__sqlanon_cid"
{% endif %}
    FROM "__sqlanon_a" AS a
),
"__sqlanon_c" AS (
    SELECT b.*
{% for s in sens %}
{% if s.recursive is not none %}
        , SUM(CASE WHEN {{ ('__sqlanon_vr%d' % s.j) | ident }} < {{ s.recursive.l | int }} THEN 1 ELSE 0 END)
              OVER (PARTITION BY {{ Q }}) AS {{ ('__sqlanon_top%d' % s.j) | ident }}
{% endif %}
{% endfor %}
    FROM "__sqlanon_b" AS b
)
{% for s in sens %}
{% if s.t_ordered is not none %}
{% set j = s.j %}
, {{ ('__sqlanon_oc%d' % j) | ident }} AS (
    SELECT "__sqlanon_cid" AS "cid", {{ ('__sqlanon_pos%d' % j) | ident }} AS "pos", COUNT(*) AS "c"
    FROM "__sqlanon_c" GROUP BY "__sqlanon_cid", {{ ('__sqlanon_pos%d' % j) | ident }}
), {{ ('__sqlanon_oq%d' % j) | ident }} AS (
    SELECT "pos", CAST(SUM(SUM("c")) OVER (ORDER BY "pos" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DOUBLE)
                  / SUM(SUM("c")) OVER () AS "fq",
           COUNT(*) OVER () AS "m"
    FROM {{ ('__sqlanon_oc%d' % j) | ident }} GROUP BY "pos"
), {{ ('__sqlanon_on%d' % j) | ident }} AS (
    SELECT "cid", SUM("c") AS "n" FROM {{ ('__sqlanon_oc%d' % j) | ident }} GROUP BY "cid"
), {{ ('__sqlanon_ocum%d' % j) | ident }} AS (
    SELECT cn."cid", q."m",
           ABS(CAST(SUM(COALESCE(oc."c", 0)) OVER (PARTITION BY cn."cid" ORDER BY q."pos" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DOUBLE)
               / cn."n" - q."fq") AS "dev"
    FROM {{ ('__sqlanon_on%d' % j) | ident }} AS cn
    CROSS JOIN {{ ('__sqlanon_oq%d' % j) | ident }} AS q
    LEFT JOIN {{ ('__sqlanon_oc%d' % j) | ident }} AS oc ON oc."cid" = cn."cid" AND oc."pos" = q."pos"
), {{ ('__sqlanon_oemd%d' % j) | ident }} AS (
    SELECT "cid", CASE WHEN MAX("m") > 1 THEN SUM("dev") / (MAX("m") - 1) ELSE 0 END AS "emd"
    FROM {{ ('__sqlanon_ocum%d' % j) | ident }} GROUP BY "cid"
)
{% endif %}
{% endfor %}
SELECT
{% for col, qi, lvl in columns %}
    c.{{ col | ident }}{% if not loop.last %},{% endif %}

{% endfor %}
FROM "__sqlanon_c" AS c
{% for s in sens %}
{% if s.t_ordered is not none %}
JOIN {{ ('__sqlanon_oemd%d' % s.j) | ident }} AS o{{ s.j }} ON o{{ s.j }}."cid" = c."__sqlanon_cid"
{% endif %}
{% endfor %}
WHERE c."__sqlanon_n" >= {{ k | int }}
{% for s in sens %}
{% if s.distinct is not none %}
  AND ROUND({{ ('__sqlanon_d%d' % s.j) | ident }}) >= {{ s.distinct | int }}
{% endif %}
{% if s.entropy is not none %}
  AND LN(c."__sqlanon_n") - {{ ('__sqlanon_xl%d' % s.j) | ident }} / c."__sqlanon_n" >= {{ s.entropy | num }}
{% endif %}
{% if s.recursive is not none and s.recursive.l > 1 %}
  AND {{ ('__sqlanon_r1_%d' % s.j) | ident }} < {{ s.recursive.c | num }} * (c."__sqlanon_n" - {{ ('__sqlanon_top%d' % s.j) | ident }})
{% endif %}
{% if s.t_equal is not none %}
  AND 0.5 * (1 + {{ ('__sqlanon_te%d' % s.j) | ident }}) <= {{ s.t_equal | num }}
{% endif %}
{% if s.t_ordered is not none %}
  AND o{{ s.j }}."emd" <= {{ s.t_ordered | num }}
{% endif %}
{% endfor %}
