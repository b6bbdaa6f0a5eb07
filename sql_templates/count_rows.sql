SELECT COUNT(*) FROM {{ relation | relation }}
