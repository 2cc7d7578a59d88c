"""``python -m mpinet.emulation``: print the generated tables of docs/emulation.md."""

from mpinet.emulation.report import emulation_report

print(emulation_report(), end="")
