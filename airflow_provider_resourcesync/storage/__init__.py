"""Destinations: local directory and S3; URI -> key mapping; atomic writes; the mirror's state."""
