"""Who took part in a session: links from the accepted entities its lines name to its recap's event entity.

The links are written by the graph (:mod:`memory.graph.took_part`), which makes them itself when an entity is
edited or merged; this module is their public face for the recap job, the review queue, the store and campaign files.
"""

from __future__ import annotations

from memory.graph.rules import named_anew, new_names
from memory.graph.took_part import link_to_recaps, took_part, unlink_unnamed

__all__ = ["link_to_recaps", "named_anew", "new_names", "took_part", "unlink_unnamed"]
