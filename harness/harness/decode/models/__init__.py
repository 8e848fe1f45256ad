"""Trusted reference models the parent uses to check outputs (never the submission's code)."""
