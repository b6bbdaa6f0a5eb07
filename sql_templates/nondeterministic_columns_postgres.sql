{# PostgreSQL: for each of `columns`, whether its collation (declared on the column, or inherited through a
   view or query) is nondeterministic: one that makes distinct strings equal, as a case-insensitive ICU collation
   does (`PostgresBackend.collated_columns`). The collation is the column expression's, known when the statement
   is planned: no row of the relation is read (LIMIT 0, outer-joined to one row of NULLs, so that a query source is
   not run). Only text columns may be asked about (`Backend.refuse_collated` passes those): pg_collation_for raises
   an error for a type without collations. A citext column is refused from its type instead
   (`CASELESS_TYPES`). #}
SELECT
{% for c in columns %}
    (SELECT NOT pc."collisdeterministic" FROM pg_catalog.pg_collation AS pc
     WHERE pc."oid" = to_regcollation(pg_collation_for(s.{{ c | ident }}))) AS {{ ('c%d' % loop.index0) | ident }}{% if not loop.last %},{% endif %}

{% endfor %}
FROM (SELECT 1 AS "one") AS o
LEFT JOIN (SELECT * FROM {{ relation | relation }} LIMIT 0) AS s ON TRUE
