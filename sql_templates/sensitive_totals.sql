{# The whole table's count of each sensitive value. #}
SELECT {{ col | ident }}, SUM("cnt") FROM {{ table | ident }} GROUP BY {{ col | ident }}
