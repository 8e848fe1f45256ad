"""The `deep-recurrence` training benchmark: trusted parent (runner), child loop and tasks."""
