"""The README's Python example runs as written (from the repository root) and does what it says."""
from __future__ import annotations

import os
import re

from conftest import ROOT


def test_readme_python_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    section = text.split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        namespace: dict = {}
        exec(compile(code, "README.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    run, con = namespace["run"], namespace["con"]
    assert "minimal" in out and "chosen:" in out and "SELECT" in out
    sizes = [n for (n,) in con.execute("SELECT COUNT(*) FROM patients_release GROUP BY zip_code, age, "
                                       "nationality").fetchall()]
    assert min(sizes) >= 4 and sum(sizes) == 12
    distinct = con.execute("SELECT MIN(d) FROM (SELECT COUNT(DISTINCT condition) d FROM patients_release "
                           "GROUP BY zip_code, age, nationality)").fetchone()[0]
    assert distinct >= 2
    # the policy's utility (discernibility) picked the chosen node among the minimal ones
    assert run.chosen.metrics["discernibility"] == min(c.metrics["discernibility"] for c in run.candidates)
