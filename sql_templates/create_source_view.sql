{# The policy's source as one temporary view; the source itself is never written. #}
CREATE OR REPLACE TEMPORARY VIEW {{ view | ident }} AS {{ query }}
