{# Anatomy (Xiao & Tao, VLDB 2006), step 1: the rows holding each sensitive value. #}
SELECT CAST({{ sensitive | ident }} AS VARCHAR) AS "value", COUNT(*) AS "n"
FROM {{ source | ident }}
GROUP BY 1
ORDER BY 1
