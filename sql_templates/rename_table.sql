ALTER TABLE {{ old | relation }} RENAME TO {{ new | relation_last }}
