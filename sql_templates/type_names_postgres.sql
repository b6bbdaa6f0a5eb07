{# PostgreSQL: the types whose OIDs (`oids`, numbers the driver reported) the driver does not know, an extension's
   or a user's, named by what they hold so that `PostgresBackend.columns` can name the ones it reads: per OID the
   name of its base type (a domain followed down to the type it is over, a domain over a domain too) and whether
   it is an array, of which the base type is its element's (an array of a domain over citext is "citext" and an
   array), whether that base type is a built-in one (in pg_catalog: a user's ENUM or composite may be named text
   or int4 in another schema) and whether it is a base type (citext is, an extension's, in any schema). The
   driver is given a scalar domain's base type itself, not an array of domains'. #}
WITH RECURSIVE "chain" AS (
    SELECT t."oid" AS "asked",
           CASE WHEN t."typcategory" = 'A' AND t."typelem" <> 0 THEN t."typelem" ELSE t."oid" END AS "cur",
           t."typcategory" = 'A' AND t."typelem" <> 0 AS "is_array", 0 AS "depth"
    FROM pg_catalog.pg_type AS t
    WHERE t."oid" IN ({% for oid in oids %}{{ oid | int }}{% if not loop.last %}, {% endif %}{% endfor %})
    UNION ALL
    SELECT c."asked", t."typbasetype", c."is_array", c."depth" + 1
    FROM "chain" AS c
    JOIN pg_catalog.pg_type AS t ON t."oid" = c."cur"
    WHERE t."typtype" = 'd' AND c."depth" < 64
)
SELECT CAST(c."asked" AS BIGINT) AS "oid", CAST(t."typname" AS VARCHAR) AS "name", c."is_array",
       n."nspname" = 'pg_catalog' AS "built_in", t."typtype" = 'b' AS "base"
FROM "chain" AS c
JOIN pg_catalog.pg_type AS t ON t."oid" = c."cur"
JOIN pg_catalog.pg_namespace AS n ON n."oid" = t."typnamespace"
WHERE t."typtype" <> 'd'
