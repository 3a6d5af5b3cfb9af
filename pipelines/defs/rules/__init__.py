"""rules assets."""
