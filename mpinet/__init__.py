"""mpinet: interconnection networks emulated on an MPI job.

(Architecture overview below; the full story is in docs/architecture.md.)

Layers, importing downward only::

    cli -> jobs -> workloads -> engine -> routing -> topology -> perm / theory

``perm`` is the one permutation kernel of the star, SCC and macro-star
families: ranking with the last symbols most significant, so a block of
consecutive node ids is a cluster (a supernode, a nucleus, a sub-network).
``topology`` holds one module per family, pure numpy functions on arrays of
node ids: ``neighbors(ids)``, named ports with classes, the papers' labels.
``theory`` evaluates the papers' closed forms; nothing is ever *computed* from
them, they are printed beside exact figures and checked.

The ``engine`` is the only layer that talks to MPI, always through a ``comm``
parameter (``None`` runs serially). Each rank owns a contiguous block of node
ids; because ids keep clusters contiguous, most hops stay on one rank and the
rest travel in one ``Alltoallv`` per step. Exact metrics (``mpinet info``) are
a BFS on that same partition. The ``cli`` turns every :class:`MpinetError`
into one line on stderr from rank 0 and exit code 2, and aborts the MPI job
when a rank fails during collective work, so no rank is left waiting.
"""

__version__ = "0.1.0"
