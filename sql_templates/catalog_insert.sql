{# One catalog row; every value a bound parameter. #}
INSERT INTO {{ name | ident }} ({% for col in columns %}{{ col | ident }}{% if not loop.last %}, {% endif %}{% endfor %})
VALUES ({% for col in columns %}?{% if not loop.last %}, {% endif %}{% endfor %})
