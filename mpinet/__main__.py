"""``python -m mpinet``: same as the ``mpinet`` console script."""

from mpinet.cli import run

run()
