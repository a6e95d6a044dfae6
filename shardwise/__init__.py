"""shardwise: how should this model be parallelised on this cluster?

The import package is assembled from the repository's top-level folders (see
pyproject.toml): ``shardwise.kb`` (fact base), ``shardwise.rules``, ``shardwise.explain``,
``shardwise.export`` and ``shardwise.cli``.
"""

__version__ = "0.1.0"
