{# A mapping table keyed by values of the source column's own type (`FrequencySet.typed_maps`): the rows
   whose text `value` is exactly how that type writes one of its values (TRY_CAST there and back gives it
   again), with all of the mapping table's columns. Joining `src.col = "v"` then matches exactly the rows that
   `CAST(src.col AS VARCHAR) = "value"` matches (for these types a value has one text form), without
   casting every source row to text: at 100 M rows of Lands End the bottom frequency set took 29 s that way,
   17 s this way. The bottom frequency set and a table release join them. #}
CREATE OR REPLACE TEMPORARY TABLE {{ name | ident }} AS
SELECT TRY_CAST("value" AS {{ type | sqltype }}) AS "v", *
FROM {{ map_table | ident }}
WHERE CAST(TRY_CAST("value" AS {{ type | sqltype }}) AS VARCHAR) = "value"
