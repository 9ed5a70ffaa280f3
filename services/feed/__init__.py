"""The feed: events recorded with their writes and announced after commit, the partner feeds that read
them, progress and streaks."""
