{# A sensitive column's distinct values as text (its mapping table `map`, one row per text), each with a key
   of its class of values equal in the column's own type `type` (`dialects.compared_type`): 0.0 and -0.0 of a
   float, 1.5 and 1.50 of a PostgreSQL numeric, '1 day' and '24:00:00' of a PostgreSQL interval print apart
   but are one value, which the privacy models must count once (`FrequencySet._create_sensitive`). The
   classes are a GROUP BY on the typed value, as the engine groups the column itself; the key is the class's
   least text. #}
SELECT m."value", c."class"
FROM {{ map | ident }} AS m
JOIN (SELECT CAST("value" AS {{ type | coltype }}) AS "typed", MIN("value") AS "class"
      FROM {{ map | ident }}
      GROUP BY CAST("value" AS {{ type | coltype }})) AS c
  ON c."typed" = CAST(m."value" AS {{ type | coltype }})
