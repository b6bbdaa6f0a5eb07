"""The `sqlanon` command line: one click group (`main`) and its commands.

- `main`:        the group, and the commands of a release (demo, anonymize, lattice, check, sql, dbt, apply,
                 schema);
- `common`:      what every command module shares (user errors as one line, JSON output, `--node`);
- `workflow`:    `report` and `hierarchy check`;
- `views`:       `status` (drift of a view release);
- `experiments`: `attack` and `experiments`;
- `marginals`:   `marginals`;
- `maxent`:      `bucketize` and `maxent`;
- `risk`:        `risk`.

The console script `sqlanon` and `python -m sqlanon.cli` both run `main`.
"""
from .main import main

__all__ = ["main"]
