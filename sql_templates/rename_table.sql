ALTER TABLE {{ old | ident }} RENAME TO {{ new | ident }}
