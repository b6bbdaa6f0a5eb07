"""What the engines make of sqlanon's SQL and settings before any server is involved: psycopg's placeholders,
a Spark master's address (no PostgreSQL server or Spark session here, unlike tests/test_engines.py)."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("sql, escaped", [
    ("SELECT x % 2 FROM t WHERE y = %s", "SELECT x %% 2 FROM t WHERE y = %s"),
    # a '%s' inside a quoted name was left single and read as a placeholder ("8 placeholders but 2 parameters")
    ('SELECT "rate%s" FROM t WHERE y = %s', 'SELECT "rate%%s" FROM t WHERE y = %s'),
    ("SELECT 'it''s 5%s' AS a, %s", "SELECT 'it''s 5%%s' AS a, %s"),
    ('SELECT "a""%" FROM "t%"', 'SELECT "a""%%" FROM "t%%"'),
])
def test_postgres_parameters_double_every_percent_but_the_placeholders(sql, escaped):
    from sqlanon.engines.postgres import _escape_percent
    assert _escape_percent(sql) == escaped


@pytest.mark.parametrize("hostport, expected", [
    ("127.0.0.1:7078", ("127.0.0.1", 7078)), ("master", ("master", 7077)), ("master:7077", ("master", 7077)),
    # the brackets went to the resolver: an IPv6 master was "Name or service not known", though reachable
    ("[::1]:7078", ("::1", 7078)), ("[fe80::1]", ("fe80::1", 7077)),
])
def test_a_spark_masters_host_and_port(hostport, expected):
    from sqlanon.engines.spark import _host_port
    assert _host_port(hostport) == expected
