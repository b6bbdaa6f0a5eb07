{# sum of c ln c over the cells of the original table (the bottom frequency set's rows): the part of
   the KL-divergence that does not depend on the node. #}
SELECT SUM(CAST("cnt" AS DOUBLE) * LN(CAST("cnt" AS DOUBLE))) FROM {{ table | ident }}
