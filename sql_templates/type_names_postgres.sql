{# PostgreSQL: the names of the types whose OIDs (`oids`, numbers the driver reported) the driver does not know,
   such as an extension's (citext), so that `PostgresBackend.columns` names them. #}
SELECT CAST(t."oid" AS BIGINT) AS "oid", CAST(t."typname" AS VARCHAR) AS "name"
FROM pg_catalog.pg_type AS t
WHERE t."oid" IN ({% for oid in oids %}{{ oid | int }}{% if not loop.last %}, {% endif %}{% endfor %})
