{# PostgreSQL: the names of the types whose OIDs (`oids`, numbers the driver reported) the driver does not know, an
   extension's or a user's, so that `PostgresBackend.columns` can name the one it reads (citext). #}
SELECT CAST(t."oid" AS BIGINT) AS "oid", CAST(t."typname" AS VARCHAR) AS "name"
FROM pg_catalog.pg_type AS t
WHERE t."oid" IN ({% for oid in oids %}{{ oid | int }}{% if not loop.last %}, {% endif %}{% endfor %})
