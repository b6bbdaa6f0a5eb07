{# The whole table's count of each sensitive value. #}
{% from "_macros.sql" import count_of %}
SELECT {{ col | ident }}, {{ count_of(entity) }} FROM {{ table | ident }} GROUP BY {{ col | ident }}
