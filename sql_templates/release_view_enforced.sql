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
     "__sqlanon_oq<j>" per value its position i, Q(i) and SQ(i) = Q(1) + ... + Q(i). With
     F(y, i) = sum_{i' <= i} |y - Q(i')|, a class whose values sit at positions a_1 < ... < a_K with
     cumulative shares x_1 < ... < x_K = 1 sums F(0, a_1 - 1) + sum_k [F(x_k, a_{k+1} - 1) - F(x_k, a_k - 1)]
     (a_{K+1} - 1 = m), which regroups per (class, value) row as F(x_{k-1}, a_k - 1) - F(x_k, a_k - 1)
     (x_0 = 0) plus F(1, m) = m - SQ(m): each row needs its own x and the one before it, x_{k-1} =
     (running count - ns) / n, so one running sum per class is the only window ("__sqlanon_os<j>"; no LEAD,
     no LAG, no class-wide frame). Q rises with i, so F(y, i) = y (2 lo - i) + SQ(i) - 2 SQ(lo) with
     lo = min(r(y), i), r(y) = how many positions have Q < y; "__sqlanon_rx<j>" holds r(x) and SQ(r(x))
     for each distinct x by one sort of the distinct x with the m values of Q, and "__sqlanon_o<j>" sums
     the rows per class (macro `ordered_emd`).
   - when the ordered EMD is the only model reading attribute j's counts, it is bounded first: per (class,
     bucket of w = ceil(m / ordered_buckets) consecutive positions) counts "__sqlanon_cb<j>" (a GROUP BY
     several times smaller than per (class, value)), the same machinery over buckets gives D_B, and
     |D - D_B| <= 2 (w - 1) / (m - 1) ("__sqlanon_bd<j>": lb, ub); only the classes neither bound decides
     ("__sqlanon_x<j>") are counted per value and measured exactly ("__sqlanon_ox<j>").
   - `joins`: how a quasi-identifier's rows find their mapping row (macro `map_join`). The mapping tables key
     base values as text ("value" = CAST(source value AS VARCHAR)); casting every source row is most of what
     reading the view costs, so a text column joins as it is, and an integer or date column on the mapping
     table's values cast to its type (exactly the rows the text join matches).
   The policy's numbers arrive through the `int` / `num` filters (a view cannot hold bound parameters). #}
{% from "_macros.sql" import map_join %}
{% set K %}{% for key in keys %}{% if not loop.first %}, {% endif %}{{ key | ident }}{% endfor %}{% endset %}
{% set CK %}{% for key in keys %}{% if not loop.first %}, {% endif %}cs.{{ key | ident }}{% endfor %}{% endset %}
{# `a.key = b.key AND ...` over the class keys #}
{% macro same_keys(a, b) %}{% for key in keys %}{% if not loop.first %} AND {% endif %}{{ a }}.{{ key | ident }} = {{ b }}.{{ key | ident }}{% endfor %}{% endmacro %}
{% macro value_positions(OQ, counts) %}
, {{ OQ }} AS (
    SELECT "v", "pos", "q", "m", SUM("q") OVER (ORDER BY "pos" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "sq"
    FROM (SELECT "v", ROW_NUMBER() OVER (ORDER BY "v") AS "pos",
                 CAST(SUM("cnt") OVER (ORDER BY "v" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DOUBLE)
                     / SUM("cnt") OVER () AS "q",
                 COUNT(*) OVER () AS "m"
          FROM ({{ counts }}) AS vt) AS oq
)
{% endmacro %}
{% macro ordered_emd(CS, OQ, C, OS, RX, O) %}
{# per (class, value): its position a, SQ(a-1), and the class's cumulative count up to it: one window, a
   running sum over the counts alone, ordered by the value as "pos" is (same NULL placement on every
   engine), the position and SQ joined after it (a narrower sort); the class size comes from
   "__sqlanon_c<j>", a GROUP BY joined back. Spark sums per class (PARTITION BY the class keys: a window
   without partitions runs on one Spark task); elsewhere one running sum over all counts ordered by (class,
   value) minus the class's "base" (the sizes of the classes before it in the same order, a running sum over
   the per-class rows): one sort of the counts with no partitioning, about half the window's time of 64,000
   partitions on DuckDB (benchmarks/RESULTS-views.md) #}
, {{ OS }} AS (
    SELECT {% for key in keys %}w.{{ key | ident }}, {% endfor %}o."pos" AS "a", o."sq" - o."q" AS "sqa",
           CAST(w."cum" AS DOUBLE) / c."n" AS "x", CAST(w."cum" - w."ns" AS DOUBLE) / c."n" AS "x0"
{% if partition_window %}
    FROM (SELECT {{ CK }}, cs."v", cs."ns",
                 SUM(cs."ns") OVER (PARTITION BY {{ CK }} ORDER BY cs."v" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "cum"
          FROM {{ CS }} AS cs) AS w
{% else %}
    FROM (SELECT {% for key in keys %}g.{{ key | ident }}, {% endfor %}g."v", g."ns", g."cum" - b."base" AS "cum"
          FROM (SELECT {{ CK }}, cs."v", cs."ns",
                       SUM(cs."ns") OVER (ORDER BY {{ CK }}, cs."v" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "cum"
                FROM {{ CS }} AS cs) AS g
          JOIN (SELECT {{ K }}, COALESCE(SUM("n") OVER (ORDER BY {{ K }} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS "base"
                FROM {{ C }}) AS b
              ON {{ same_keys('b', 'g') }}) AS w
{% endif %}
    JOIN {{ OQ }} AS o ON o."v" IS NOT DISTINCT FROM w."v"
    JOIN {{ C }} AS c ON {{ same_keys('c', 'w') }}
), {{ RX }} AS (
    {# per distinct cumulative share x: r = how many positions have Q(i) < x (ties count either way:
       |x - Q(i)| = 0 there) and SQ(r), by one sort of the distinct x with the m values of Q #}
    SELECT "x", "r", "sqr" FROM (
        SELECT u."x", u."kind",
               SUM(1 - u."kind") OVER (ORDER BY u."x", u."kind" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "r",
               SUM((1 - u."kind") * u."x") OVER (ORDER BY u."x", u."kind" ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "sqr"
        FROM (SELECT DISTINCT "x", 1 AS "kind" FROM {{ OS }} UNION ALL SELECT "q", 0 FROM {{ OQ }}) AS u
    ) AS w WHERE w."kind" = 1
), {{ O }} AS (
    {# per row F(x0, a-1) - F(x, a-1) (the SQ(a-1) terms cancel; x0 = 0 has no "__sqlanon_rx" row: r = 0),
       per class their sum + F(1, m) = m - SQ(m) #}
    SELECT {% for key in keys %}w.{{ key | ident }}, {% endfor %}
           CASE WHEN MAX(qm."m") > 1
                THEN (SUM(w."x0" * (2 * w."lo0" - w."a" + 1) - 2 * w."sq0" - w."x" * (2 * w."lo1" - w."a" + 1) + 2 * w."sq1")
                      + MAX(qm."m") - MAX(qm."sq")) / (MAX(qm."m") - 1)
                ELSE 0 END AS "emd_ordered"
    FROM (SELECT s.*,
                 LEAST(COALESCE(r0."r", 0), s."a" - 1) AS "lo0",
                 CASE WHEN COALESCE(r0."r", 0) <= s."a" - 1 THEN COALESCE(r0."sqr", 0) ELSE s."sqa" END AS "sq0",
                 LEAST(r1."r", s."a" - 1) AS "lo1",
                 CASE WHEN r1."r" <= s."a" - 1 THEN r1."sqr" ELSE s."sqa" END AS "sq1"
          FROM {{ OS }} AS s
          JOIN {{ RX }} AS r1 ON r1."x" = s."x"
          LEFT JOIN {{ RX }} AS r0 ON r0."x" = s."x0") AS w
    CROSS JOIN (SELECT "m", "sq" FROM {{ OQ }} WHERE "pos" = "m") AS qm
    GROUP BY {% for key in keys %}{% if not loop.first %}, {% endif %}w.{{ key | ident }}{% endfor %}

)
{% endmacro %}
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
    {{ map_join("LEFT JOIN", maps[qi.name] | relation, "m%d" % qi.index, "src." ~ (col | ident), joins.get(col)) }}
{% endif %}
{% endfor %}
{% if sensitive_columns %}
    {# a row without a sensitive value is withheld: it could not be judged (a release refuses NULLs), and counted
       as a value it would pass for a second distinct one beside the class's only known value #}
    WHERE {% for c in sensitive_columns %}src.{{ c | ident }} IS NOT NULL{% if not loop.last %} AND {% endif %}{% endfor %}

{% endif %}
)
{% for s in sens %}
{% set j = s.j %}
{% set C = ('__sqlanon_c%d' % j) | ident %}{% set OQ = ('__sqlanon_oq%d' % j) | ident %}{% set O = ('__sqlanon_o%d' % j) | ident %}
{% set bucketed = s.t_ordered is not none and s.distinct is none and s.entropy is none and s.recursive is none
                  and s.t_equal is none and ordered_buckets > 0 %}
{% if bucketed %}
{# the ordered EMD alone: bounded first from the classes' counts per bucket of w consecutive positions,
   computed exactly only for the classes the bounds leave undecided (docs/DESIGN.md section 4). Moving
   each value's mass to the first position of its bucket moves it at most w - 1 positions, so by the
   triangle inequality of the EMD |D(P, Q) - D(P_B, Q_B)| <= 2 (w - 1) / (m - 1), and D(P_B, Q_B) is the
   bucketed distributions' ordered EMD over mb buckets scaled by w (mb - 1) / (m - 1). #}
{% set CB = ('__sqlanon_cb%d' % j) | ident %}{% set BQ = ('__sqlanon_bq%d' % j) | ident %}{% set OB = ('__sqlanon_ob%d' % j) | ident %}
{% set BD = ('__sqlanon_bd%d' % j) | ident %}{% set X = ('__sqlanon_x%d' % j) | ident %}{% set OX = ('__sqlanon_ox%d' % j) | ident %}
{% set CX = ('__sqlanon_cx%d' % j) | ident %}{% set CSX = ('__sqlanon_csx%d' % j) | ident %}
{{ value_positions(OQ, 'SELECT g.' ~ (s.col | ident) ~ ' AS "v", COUNT(*) AS "cnt" FROM "__sqlanon_g" AS g GROUP BY g.' ~ (s.col | ident)) }}
, {{ OB }} AS (
    SELECT "m", ("m" + "buckets" - 1) // "buckets" AS "w"
    FROM (SELECT MAX("m") AS "m", {{ ordered_buckets | int }} AS "buckets" FROM {{ OQ }}) AS t
), {{ CB }} AS (
    SELECT {% for key in keys %}g.{{ key | ident }}, {% endfor %}(o."pos" - 1) // ob."w" AS "v", COUNT(*) AS "ns"
    FROM "__sqlanon_g" AS g
    JOIN {{ OQ }} AS o ON o."v" IS NOT DISTINCT FROM g.{{ s.col | ident }}
    CROSS JOIN {{ OB }} AS ob
    GROUP BY {% for key in keys %}g.{{ key | ident }}, {% endfor %}(o."pos" - 1) // ob."w"
), {{ C }} AS (
    SELECT {{ K }}, SUM("ns") AS "n" FROM {{ CB }} GROUP BY {{ K }}
)
{{ value_positions(BQ, 'SELECT "v", SUM("ns") AS "cnt" FROM ' ~ CB ~ ' GROUP BY "v"') }}
{{ ordered_emd(CB, BQ, C, ('__sqlanon_osb%d' % j) | ident, ('__sqlanon_rxb%d' % j) | ident, ('__sqlanon_eb%d' % j) | ident) }}
, {{ BD }} AS (
    SELECT {% for key in keys %}b.{{ key | ident }}, {% endfor %}b."emd_ordered" * sc."scale" - sc."slack" AS "lb",
           b."emd_ordered" * sc."scale" + sc."slack" AS "ub"
    FROM {{ ('__sqlanon_eb%d' % j) | ident }} AS b
    CROSS JOIN (SELECT CASE WHEN ob."m" > 1 THEN CAST((bq."mb" - 1) * ob."w" AS DOUBLE) / (ob."m" - 1) ELSE 0 END AS "scale",
                       CASE WHEN ob."m" > 1 THEN CAST(2 * (ob."w" - 1) AS DOUBLE) / (ob."m" - 1) ELSE 0 END AS "slack"
                FROM {{ OB }} AS ob CROSS JOIN (SELECT MAX("m") AS "mb" FROM {{ BQ }}) AS bq) AS sc
), {{ X }} AS (
    SELECT {{ K }} FROM {{ BD }} WHERE "ub" > {{ s.t_ordered | num }} AND "lb" <= {{ s.t_ordered | num }}
), {{ CX }} AS (
    SELECT c.* FROM {{ C }} AS c JOIN {{ X }} AS x ON {{ same_keys('x', 'c') }}
), {{ CSX }} AS (
    SELECT {% for key in keys %}g.{{ key | ident }}, {% endfor %}g.{{ s.col | ident }} AS "v", COUNT(*) AS "ns"
    FROM "__sqlanon_g" AS g JOIN {{ X }} AS x ON {{ same_keys('x', 'g') }}
    GROUP BY {% for key in keys %}g.{{ key | ident }}, {% endfor %}g.{{ s.col | ident }}
)
{{ ordered_emd(CSX, OQ, CX, ('__sqlanon_osx%d' % j) | ident, ('__sqlanon_rxx%d' % j) | ident, OX) }}
{# per class: the exact distance when it was computed, else the bound that decides it #}
, {{ O }} AS (
    SELECT {% for key in keys %}bd.{{ key | ident }}, {% endfor %}bd."lb", bd."ub", ox."emd_ordered" AS "exact",
           COALESCE(ox."emd_ordered", CASE WHEN bd."ub" <= {{ s.t_ordered | num }} THEN bd."ub" ELSE bd."lb" END) AS "emd_ordered"
    FROM {{ BD }} AS bd LEFT JOIN {{ OX }} AS ox ON {{ same_keys('ox', 'bd') }}
)
{% else %}
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
        ON {{ same_keys('cn', 'cs') }}
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
{% set CS = ('__sqlanon_cs%d' % j) | ident %}
{{ value_positions(OQ, 'SELECT "v", SUM("ns") AS "cnt" FROM ' ~ CS ~ ' GROUP BY "v"') }}
{{ ordered_emd(CS, OQ, C, ('__sqlanon_os%d' % j) | ident, ('__sqlanon_rx%d' % j) | ident, O) }}
{% endif %}
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
    JOIN {{ ('__sqlanon_c%d' % s.j) | ident }} AS c{{ s.j }} ON {{ same_keys('c' ~ s.j, N) }}
{% endif %}

{% if s.recursive is not none and s.recursive.l > 2 %}
    JOIN {{ ('__sqlanon_r%d' % s.j) | ident }} AS r{{ s.j }} ON {{ same_keys('r' ~ s.j, N) }}
{% endif %}
{% if s.t_ordered is not none %}
    JOIN {{ ('__sqlanon_o%d' % s.j) | ident }} AS o{{ s.j }} ON {{ same_keys('o' ~ s.j, N) }}
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
JOIN "__sqlanon_ok" AS ok ON {{ same_keys('ok', 'g') }}