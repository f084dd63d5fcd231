"""The models one process serves and learns: create, restore at start, discover, delete.

A process with role ``api`` or ``all`` serves models (:class:`ModelRuntime`, loaded on
first use or at start); a process with role ``learner`` or ``all`` runs a
:class:`ModelLearner` for every stored model, of which the one holding the model's lease
learns and the others stand by.  Models created by another process are discovered
every ``snapshot_poll_seconds`` (and those deleted by another process dropped), unless
the store lost its data meanwhile (a new store epoch): then this process writes its
models back (:mod:`service.domain.recovery`) instead of dropping them.

One module per concern, each a layer of :class:`ModelRegistry`: what they share
(:mod:`.base`), serving (:mod:`.serving`), learning, discovery and recovery
(:mod:`.learning`), creating and deleting (:mod:`.lifecycle`).  The registry raises
:mod:`service.domain.errors`; :mod:`service.http.errors` answers them.
"""

from service.domain.registry.lifecycle import ModelRegistry

__all__ = ["ModelRegistry"]
