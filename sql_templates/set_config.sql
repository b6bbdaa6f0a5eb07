{# PostgreSQL: one session setting from source.settings (name and value are bound parameters). #}
SELECT set_config(?, ?, false)
