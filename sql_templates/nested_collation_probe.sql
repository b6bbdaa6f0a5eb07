{# DuckDB: 1 when lists of texts group under their texts' collation (DuckDB 2: ['A'] and ['a'] are one value
   under NOCASE), 2 when they group exactly (DuckDB 1.4 and 1.5); `DuckDBBackend._nested_texts_collate`. #}
SELECT COUNT(DISTINCT "x")
FROM (SELECT ['A' COLLATE NOCASE] AS "x" UNION ALL SELECT ['a' COLLATE NOCASE] AS "x") AS "lists"
