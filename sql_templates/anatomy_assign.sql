{# Anatomy's bucket assignment in one pass (sqlanon.maxent.anatomy explains the round robin).

   `groups` holds one row per sensitive value: its position "start" in the row order (groups by
   decreasing size), its cap (rows kept) and whether it counts for diversity. Within a value, rows are
   taken in a seeded pseudo-random order (md5 of the seed and the row's text; the ? is the seed).
   A counted row of rank r gets bucket (start + r) mod m: every value holds at most m contiguous ranks,
   so no bucket gets a counted value twice. Rows of a value that does not count are spread over the
   buckets (spread) or left out. Pseudonyms number the kept rows by bucket, then by quasi-identifier
   and another seeded hash that ignores the sensitive value (so the order in a bucket reveals nothing). A row
   finds its value as anatomy_value_counts.sql named it (macro `anatomy_values`). The row's own text breaks
   the last ties (rows alike but for the text of one value, 0.0 and -0.0): the same seed, the same tables. #}
{% from "_macros.sql" import anatomy_values %}
CREATE OR REPLACE TEMPORARY TABLE {{ table | ident }} AS
WITH ranked AS (
    SELECT
{% for c in qis %}
        src.{{ c | ident }},
{% endfor %}
        src.{{ sensitive | ident }},
        g."value" AS "__sqlanon_value",
        g."start" AS "__sqlanon_start",
        g."cap" AS "__sqlanon_cap",
        g."counted" AS "__sqlanon_counted",
        ROW_NUMBER() OVER (
            PARTITION BY g."value"
            ORDER BY md5(concat_ws(chr(31), CAST(? AS VARCHAR), g."value"{% for c in qis %}, CAST(src.{{ c | ident }} AS VARCHAR){% endfor %}))
{% for c in qis %}
                   , src.{{ c | ident }}
{% endfor %}
                   , CAST(src.{{ sensitive | ident }} AS VARCHAR)
        ) - 1 AS "__sqlanon_r"
    FROM {{ source | ident }} AS src
    JOIN ({{ anatomy_values(source, sensitive) }}) AS v ON v."typed" = src.{{ sensitive | ident }}
    JOIN {{ groups | ident }} AS g ON g."value" = v."value"
), placed AS (
    SELECT *,
           CASE WHEN "__sqlanon_counted" THEN ("__sqlanon_start" + "__sqlanon_r") % {{ m | int }}
                ELSE "__sqlanon_r" % {{ m | int }} END + 1 AS "__sqlanon_planned"
    FROM ranked
    WHERE ("__sqlanon_counted" AND "__sqlanon_r" < "__sqlanon_cap" AND "__sqlanon_start" + "__sqlanon_r" < {{ limit | int }})
{% if spread %}
       OR NOT "__sqlanon_counted"
{% endif %}
), kept AS (
    SELECT *, DENSE_RANK() OVER (ORDER BY "__sqlanon_planned") AS "bucket"
    FROM placed
{% if keep %}
    WHERE "__sqlanon_planned" IN (SELECT "bucket" FROM {{ keep | ident }})
{% endif %}
)
SELECT
{% for c in qis %}
    {{ c | ident }},
{% endfor %}
    {{ sensitive | ident }},
    "bucket",
    ROW_NUMBER() OVER (
        ORDER BY "bucket"{% for c in qis %}, {{ c | ident }}{% endfor %},
                 md5(concat_ws(chr(31), CAST(? AS VARCHAR){% for c in qis %}, CAST({{ c | ident }} AS VARCHAR){% endfor %})),
                 "__sqlanon_value", CAST({{ sensitive | ident }} AS VARCHAR)
    ) AS "pseudonym"
FROM kept
