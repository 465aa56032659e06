"""The knowledge base: versioned, sourced data files, validated by a schema, loaded once."""

from gpuenv.kb.loader import KbFile, KnowledgeBase, Row, default_kb, load_kb

__all__ = ["KbFile", "KnowledgeBase", "Row", "default_kb", "load_kb"]
