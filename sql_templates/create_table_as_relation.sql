{# Copy a registered relation (a small frame from Python, e.g. a mapping table) into a table. #}
CREATE {% if replace %}OR REPLACE {% endif %}{% if temp %}TEMPORARY {% endif %}TABLE {{ name | relation }} AS
SELECT * FROM {{ relation | relation }}
