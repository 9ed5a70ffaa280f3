"""Partnerships and access: who watches or vouches for whom, and what a viewer may read."""
