{# A self-enforcing view release (sqlanon/views.py, docs/DESIGN.md section 4): the generalizing SELECT over
   the live source; every class (q*-block) is measured at read time and only rows of classes that
   satisfy the policy are returned.
   - "__sqlanon_g": the generalized rows, and per quasi-identifier an integer class key "__sqlanon_k<i>":
     the mapping table's code at the released level, -1 for a value missing from the mapping table
     (such a value is released at the hierarchy's top label, NULL at level 0), the top's code when the
     released level is the top. Keys are never NULL, so
     classes join back by plain equality on every engine. Classes by code may be finer than classes by
     label (an unknown value beside a known one with the same label): every model holds for a union of
     classes that each satisfy it (monotonicity), so enforcing the finer classes is enough.
   - "__sqlanon_cs<j>": per (class, value of sensitive attribute j) the count ns; "__sqlanon_m<j>" adds
     per class n = sum ns and the value's share q in the live source (GROUP BYs joined back);
     "__sqlanon_c<j>" per class: distinct values, sum ns ln ns (entropy H = ln n - (sum ns ln ns)/n), r1
     and, for l = 2, top = r1 (recursive (c,l): r1 < c (n - top), top the sum of the l-1 largest counts;
     "__sqlanon_r<j>" for l > 2), the equal EMD 1/2 (sum |ns/n - q| + 1 - sum q). The class size n of
     the first checked attribute's "__sqlanon_c<j>" is the one the k check reads (no second GROUP BY).
   - the ordered EMD (t-closeness paper, Sec. 4.2: D = 1/(m-1) sum_{i<m} |P(i) - Q(i)|, P and Q the
     cumulative shares over the m ordered values of the live domain) without a classes x values grid:
     "__sqlanon_oq<j>" per value its position i, Q(i) and SQ(i) = Q(1) + ... + Q(i); "__sqlanon_os<j>"
     per (class, value) the segment [a, b] of positions over which the class's cumulative share is a
     constant x (from its value's position to the next one's, minus one), and for its first value the
     positions before it (P = 0: they add SQ(a-1)). Q rises with i, so over [a, b] the terms
     |x - Q(i)| are x - Q(i) up to lo = the last position with Q(i) < x, and Q(i) - x after it:
     x (lo - a + 1) - (SQ(lo) - SQ(a-1)) + (SQ(b) - SQ(lo)) - x (b - lo), with lo clamped to [a-1, b].
     "__sqlanon_rx<j>": r(x) = how many positions have Q(i) < x, for each distinct x by one sort of the
     distinct x with the m values of Q; "__sqlanon_o<j>" sums the segments per class.
   - `joins`: how a quasi-identifier's rows find their mapping row. The mapping tables key base values as
     text ("value" = CAST(source value AS VARCHAR)); casting every source row is most of what reading
     the view costs, so a text column joins as it is ("text"), and an integer or date column (`joins[col]`
     its type) joins on the mapping table's values cast to that type, keeping only the values that are
     their own canonical text (CAST(TRY_CAST(value) AS VARCHAR) = value): exactly the rows the text join
     matches, one mapping row each, with the casts on the small side.
   The policy's numbers arrive through the `int` / `num` filters (a view cannot hold bound parameters). #}
{% set K %}{% for key in keys %}{% if not loop.first %}, {% endif %}{{ key | ident }}{% endfor %}{% endset %}
{% set CK %}{% for key in keys %}{% if not loop.first %}, {% endif %}cs.{{ key | ident }}{% endfor %}{% endset %}
{% macro code(qi, lvl) %}COALESCE(m{{ qi.index }}.{{ ('c%d' % lvl) | ident }}, {% if lvl == qi.height %}t{{ qi.index }}."topc"{% else %}-1{% endif %}){% endmacro %}
CREATE OR REPLACE VIEW {{ name | relation }} AS
WITH "__sqlanon_g" AS (
    SELECT
{% for col, qi, lvl in columns %}
{% if qi is none %}
        src.{{ col | ident }},
{% elif lvl == 0 %}
        CASE WHEN m{{ qi.index }}."value" IS NULL THEN NULL ELSE src.{{ col | ident }} END AS {{ col | ident }},
{% else %}
        COALESCE(m{{ qi.index }}.{{ ('l%d' % lvl) | ident }}, t{{ qi.index }}."top") AS {{ col | ident }},
{% endif %}
{% endfor %}
{% if packed %}
        {% for col, qi, lvl in columns %}{% if qi is not none %}{% if col != qi_cols[0] %} + {% endif %}({{ code(qi, lvl) }} + 1) * {{ packed[col] | int }}{% endif %}{% endfor %} AS {{ keys[0] | ident }}
{% else %}
{% for col, qi, lvl in columns %}
{% if qi is not none %}
        {{ code(qi, lvl) }} AS {{ ('__sqlanon_k%d' % qi_cols.index(col)) | ident }}{% if col != qi_cols[-1] %},{% endif %}

{% endif %}
{% endfor %}
{% endif %}
    FROM {{ source | relation }} AS src
{% for col, qi, lvl in columns %}
{% if qi is not none %}
{% if lvl > 0 %}
    CROSS JOIN (SELECT MIN({{ ('l%d' % qi.height) | ident }}) AS "top", MIN({{ ('c%d' % qi.height) | ident }}) AS "topc" FROM {{ maps[qi.name] | relation }}) AS t{{ qi.index }}
{% endif %}
{% set how = joins.get(col) %}
{% if how == "text" %}
    LEFT JOIN {{ maps[qi.name] | relation }} AS m{{ qi.index }} ON m{{ qi.index }}."value" = src.{{ col | ident }}
{% elif how %}
    LEFT JOIN (SELECT mt.*, TRY_CAST(mt."value" AS {{ how | sqltype }}) AS "__sqlanon_tv" FROM {{ maps[qi.name] | relation }} AS mt
               WHERE CAST(TRY_CAST(mt."value" AS {{ how | sqltype }}) AS VARCHAR) = mt."value") AS m{{ qi.index }}
        ON m{{ qi.index }}."__sqlanon_tv" = src.{{ col | ident }}
{% else %}
    LEFT JOIN {{ maps[qi.name] | relation }} AS m{{ qi.index }} ON m{{ qi.index }}."value" = CAST(src.{{ col | ident }} AS VARCHAR)
{% endif %}
{% endif %}
{% endfor %}
)
{% for s in sens %}
{% set j = s.j %}
, {{ ('__sqlanon_cs%d' % j) | ident }} AS (
    SELECT {{ K }}, {{ s.col | ident }} AS "v", COUNT(*) AS "ns"
    FROM "__sqlanon_g" GROUP BY {{ K }}, {{ s.col | ident }}
), {{ ('__sqlanon_m%d' % j) | ident }} AS (
    SELECT cs.*
{% if s.t_equal is not none %}
           , cn."n", vq."q"
{% endif %}
    FROM {{ ('__sqlanon_cs%d' % j) | ident }} AS cs
{% if s.t_equal is not none %}
    {# n per class and q per value from GROUP BYs joined back (hash joins), not windows over every count #}
    JOIN (SELECT {{ K }}, SUM("ns") AS "n" FROM {{ ('__sqlanon_cs%d' % j) | ident }} GROUP BY {{ K }}) AS cn
        ON {% for key in keys %}{% if not loop.first %} AND {% endif %}cn.{{ key | ident }} = cs.{{ key | ident }}{% endfor %}

    JOIN (SELECT "v", CAST(SUM("ns") AS DOUBLE) / SUM(SUM("ns")) OVER () AS "q"
          FROM {{ ('__sqlanon_cs%d' % j) | ident }} GROUP BY "v") AS vq ON vq."v" IS NOT DISTINCT FROM cs."v"
{% endif %}
), {{ ('__sqlanon_c%d' % j) | ident }} AS (
    SELECT {{ K }},
           SUM("ns") AS "n",
           COUNT(*) AS "d",
           SUM("ns" * LN("ns")) AS "xl",
           MAX("ns") AS "r1"
{% if s.recursive is not none and s.recursive.l == 2 %}
           , MAX("ns") AS "top"
{% endif %}
{% if s.t_equal is not none %}
           , 0.5 * (SUM(ABS(CAST("ns" AS DOUBLE) / "n" - "q")) + 1 - SUM("q")) AS "emd_equal"
{% endif %}
    FROM {{ ('__sqlanon_m%d' % j) | ident }} GROUP BY {{ K }}
)
{% if s.recursive is not none and s.recursive.l > 2 %}
{# the sum of the l-1 largest counts of each class, ranked over the (class, count) pairs (how many values
   have each count: a few per class), not over every (class, value) #}
, {{ ('__sqlanon_r%d' % j) | ident }} AS (
    SELECT {{ K }}, SUM("ns" * LEAST("cnt", GREATEST(0, {{ (s.recursive.l - 1) | int }} - "before"))) AS "top"
    FROM (SELECT {{ K }}, "ns", "cnt",
                 COALESCE(SUM("cnt") OVER (PARTITION BY {{ K }} ORDER BY "ns" DESC
                                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS "before"
          FROM (SELECT {{ K }}, "ns", COUNT(*) AS "cnt" FROM {{ ('__sqlanon_cs%d' % j) | ident }} GROUP BY {{ K }}, "ns") AS cc
    ) AS w
    GROUP BY {{ K }}
)
{% endif %}
{% if s.t_ordered is not none %}
{% set CS = ('__sqlanon_cs%d' % j) | ident %}{% set OQ = ('__sqlanon_oq%d' % j) | ident %}{% set OS = ('__sqlanon_os%d' % j) | ident %}
, {{ OQ }} AS (
    SELECT "v", "pos", "q", "m", SUM("q") OVER (ORDER BY "pos" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "sq"
    FROM (SELECT "v", ROW_NUMBER() OVER (ORDER BY "v") AS "pos",
                 CAST(SUM("cnt") OVER (ORDER BY "v" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DOUBLE)
                     / SUM("cnt") OVER () AS "q",
                 COUNT(*) OVER () AS "m"
          FROM (SELECT "v", SUM("ns") AS "cnt" FROM {{ CS }} GROUP BY "v") AS vt) AS oq
), {{ OS }} AS (
    SELECT {% for key in keys %}cs.{{ key | ident }}, {% endfor %}o."pos" AS "a", o."sq" - o."q" AS "sqa", o."m",
           COALESCE(LEAD(o."pos") OVER (PARTITION BY {{ CK }} ORDER BY o."pos"), o."m" + 1) - 1 AS "b",
           CAST(SUM(cs."ns") OVER (PARTITION BY {{ CK }} ORDER BY o."pos" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DOUBLE)
               / SUM(cs."ns") OVER (PARTITION BY {{ CK }} ORDER BY o."pos" ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS "x",
           CASE WHEN LAG(o."pos") OVER (PARTITION BY {{ CK }} ORDER BY o."pos") IS NULL THEN o."sq" - o."q" ELSE 0 END AS "head"
    FROM {{ CS }} AS cs JOIN {{ OQ }} AS o ON o."v" IS NOT DISTINCT FROM cs."v"
), {{ ('__sqlanon_rx%d' % j) | ident }} AS (
    SELECT "x", "r" FROM (
        SELECT u."x", u."kind", SUM(1 - u."kind") OVER (ORDER BY u."x", u."kind" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "r"
        FROM (SELECT DISTINCT "x", 1 AS "kind" FROM {{ OS }} UNION ALL SELECT "q", 0 FROM {{ OQ }}) AS u
    ) AS w WHERE w."kind" = 1
), {{ ('__sqlanon_or%d' % j) | ident }} AS (
    SELECT s.*, rx."r" FROM {{ OS }} AS s JOIN {{ ('__sqlanon_rx%d' % j) | ident }} AS rx ON rx."x" = s."x"
), {{ ('__sqlanon_o%d' % j) | ident }} AS (
    SELECT {% for key in keys %}w.{{ key | ident }}, {% endfor %}
           CASE WHEN MAX(w."m") > 1 THEN SUM(w."x" * (w."lo" - w."a" + 1) - (COALESCE(ql."sq", 0) - w."sqa")
                                             + (qb."sq" - COALESCE(ql."sq", 0)) - w."x" * (w."b" - w."lo") + w."head")
                                         / (MAX(w."m") - 1)
                ELSE 0 END AS "emd_ordered"
    FROM (SELECT o.*, GREATEST(LEAST(o."r", o."b"), o."a" - 1) AS "lo" FROM {{ ('__sqlanon_or%d' % j) | ident }} AS o) AS w
    JOIN {{ OQ }} AS qb ON qb."pos" = w."b"
    LEFT JOIN {{ OQ }} AS ql ON ql."pos" = w."lo"
    GROUP BY {% for key in keys %}{% if not loop.first %}, {% endif %}w.{{ key | ident }}{% endfor %}

)
{% endif %}
{% endfor %}
{% if not sens %}
, "__sqlanon_n" AS (
    SELECT {{ K }}, COUNT(*) AS "n" FROM "__sqlanon_g" GROUP BY {{ K }}
)
{% endif %}
{% set N = ('c%d' % sens[0].j) if sens else 'n' %}
, "__sqlanon_ok" AS (
    SELECT {% for key in keys %}{{ N }}.{{ key | ident }}{% if not loop.last %}, {% endif %}{% endfor %}

{% if sens %}
    {# the class sizes are those of the first checked attribute's counts #}
    FROM {{ ('__sqlanon_c%d' % sens[0].j) | ident }} AS c{{ sens[0].j }}
{% else %}
    FROM "__sqlanon_n" AS n
{% endif %}
{% for s in sens %}
{% if not loop.first %}
    JOIN {{ ('__sqlanon_c%d' % s.j) | ident }} AS c{{ s.j }} ON {% for key in keys %}{% if not loop.first %} AND {% endif %}c{{ s.j }}.{{ key | ident }} = {{ N }}.{{ key | ident }}{% endfor %}
{% endif %}

{% if s.recursive is not none and s.recursive.l > 2 %}
    JOIN {{ ('__sqlanon_r%d' % s.j) | ident }} AS r{{ s.j }} ON {% for key in keys %}{% if not loop.first %} AND {% endif %}r{{ s.j }}.{{ key | ident }} = {{ N }}.{{ key | ident }}{% endfor %}

{% endif %}
{% if s.t_ordered is not none %}
    JOIN {{ ('__sqlanon_o%d' % s.j) | ident }} AS o{{ s.j }} ON {% for key in keys %}{% if not loop.first %} AND {% endif %}o{{ s.j }}.{{ key | ident }} = {{ N }}.{{ key | ident }}{% endfor %}

{% endif %}
{% endfor %}
    WHERE {{ N }}."n" >= {{ k | int }}
{% for s in sens %}
{% if s.distinct is not none %}
      AND c{{ s.j }}."d" >= {{ s.distinct | int }}
{% endif %}
{% if s.entropy is not none %}
      AND LN(c{{ s.j }}."n") - c{{ s.j }}."xl" / c{{ s.j }}."n" >= {{ s.entropy | num }}
{% endif %}
{% if s.recursive is not none and s.recursive.l > 1 %}
      AND c{{ s.j }}."r1" < {{ s.recursive.c | num }} * (c{{ s.j }}."n" - {{ 'r' if s.recursive.l > 2 else 'c' }}{{ s.j }}."top")
{% endif %}
{% if s.t_equal is not none %}
      AND c{{ s.j }}."emd_equal" <= {{ s.t_equal | num }}
{% endif %}
{% if s.t_ordered is not none %}
      AND o{{ s.j }}."emd_ordered" <= {{ s.t_ordered | num }}
{% endif %}
{% endfor %}
)
SELECT
{% for col, qi, lvl in columns %}
    g.{{ col | ident }}{% if not loop.last %},{% endif %}

{% endfor %}
FROM "__sqlanon_g" AS g
JOIN "__sqlanon_ok" AS ok ON {% for key in keys %}{% if not loop.first %} AND {% endif %}ok.{{ key | ident }} = g.{{ key | ident }}{% endfor %}
