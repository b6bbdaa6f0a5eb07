"""`python -m sqlanon.cli`: the `sqlanon` command line."""
from .main import main

main()
