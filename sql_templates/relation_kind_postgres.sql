{# 'TABLE' or 'VIEW' for a relation name as PostgreSQL resolves it (PostgreSQL): an unqualified name through the
   whole search_path, as DROP ... IF EXISTS and ALTER resolve it, not in current_schema() alone. Looked up in the
   current schema only, a release r (current schema sqlanon, the default "$user", public) passed the ownership
   check, and the DROP VIEW IF EXISTS "r" of its CREATE OR REPLACE dropped a user's public.r. This connection's
   temporary tables are not relations a release may replace (work tables). A materialized view is a VIEW, a
   sequence, index or foreign table a TABLE: a name in use either way. The ? is the name's quoted text. #}
SELECT CASE WHEN c.relkind IN ('v', 'm') THEN 'VIEW' ELSE 'TABLE' END
FROM pg_catalog.pg_class AS c
WHERE c.oid = to_regclass(?)
  AND c.relnamespace <> pg_my_temp_schema()
