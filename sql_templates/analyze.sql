{# PostgreSQL: statistics for a freshly filled work table (autovacuum never analyzes temporary tables). #}
ANALYZE {{ name | relation }}
