"""Routers for the macrostar family (being written)."""

from __future__ import annotations

from mpinet.routing.base import Router

#: the router classes this module registers
ROUTERS_HERE: tuple[type[Router], ...] = ()
