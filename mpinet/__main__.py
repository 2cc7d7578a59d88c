"""``python -m mpinet``: same as the ``mpinet`` console script."""

from mpinet.cli import console

console()
