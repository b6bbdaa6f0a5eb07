SELECT COUNT(*) FROM {{ relation | ident }}
