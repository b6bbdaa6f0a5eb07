{# A mapping table kept beside a view release (views cannot read temporary tables). #}
CREATE OR REPLACE TABLE {{ name | relation }} AS SELECT * FROM {{ map_table | ident }}
