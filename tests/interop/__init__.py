"""Interop with resync 2.0.1, the ResourceSync reference implementation: our engines follow
Sources it builds, and it follows our mirror."""
