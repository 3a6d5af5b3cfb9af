"""Storage readers: S3 Inventory, S3 listings, fs_scan; checkpoint and dataset patterns."""
