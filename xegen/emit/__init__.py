"""Xe instruction model, encoder and decoder, IGA-syntax text, compaction and the zebin container."""
