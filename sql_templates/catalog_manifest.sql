{# The manifest JSON a catalog row holds (one release's main row). Parameters: seq, name. #}
SELECT {{ 'manifest' | ident }} FROM {{ name | ident }}
WHERE {{ 'seq' | ident }} = ? AND {{ 'name' | ident }} = ?
