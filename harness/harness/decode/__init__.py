"""Decode benchmarks (qwen3-4b-decode, toy-decode)."""
