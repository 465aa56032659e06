"""Maintainer tools for the knowledge base: they reach the package index (refresh, audit against
the index, the arch lists read from wheels) and write the packaged data files. Nothing that gpuenv
loads at run time imports this package."""
