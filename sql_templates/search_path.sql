{# The schemas an unqualified relation name is looked up in, in order (DuckDB): the search_path when one is set
   (entries `schema` or `catalog.schema`), else the current schema. What a release view needs to write its
   source by the name that resolves now, not by the bare name, which a view resolves in its own schema first. #}
SELECT current_schemas(false), current_schema()
