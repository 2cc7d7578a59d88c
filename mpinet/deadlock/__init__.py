"""The static deadlock analysis: channel dependency graphs of a router's routes.

Routers only route (:mod:`mpinet.routing`); this package follows their routes and
asks whether a buffer or VC deadlock is possible before anything runs:

- :mod:`~mpinet.deadlock.analysis`: the channel dependency graph (one channel per link,
  or per link and hop class) and its verdict; the destinations it follows;
- :mod:`~mpinet.deadlock.vc`: the same at (link, VC) level under a VC policy, and the
  smallest V with an acyclic graph;
- :mod:`~mpinet.deadlock.vc_need`: the VCs a policy needs for a router's routes
  (:func:`~mpinet.deadlock.vc_need.check` refuses a flit run with fewer);
- :mod:`~mpinet.deadlock.routes`, :mod:`~mpinet.deadlock.route_enum`: following every
  route (or the translation targets' only) as hop keys;
- :mod:`~mpinet.deadlock.channel_graph`: cycle search on edge arrays;
- :mod:`~mpinet.deadlock.literature`: the published bounds a report cites.

The VC policies themselves stay in :mod:`mpinet.routing.vc_policies`: the flit engine
asks them for every hop at run time. Layer: beside the engine, below jobs (no MPI).
"""
