"""Job readers: Slurm sacct, Kubernetes pods, job CSV."""
