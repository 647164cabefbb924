"""Stand-in for Hermes 0.19.0's cron package."""
