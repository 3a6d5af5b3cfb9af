"""Telemetry readers: nvidia-smi, nvidia-smi dmon, dcgm-exporter scrapes, Prometheus JSON, metrics CSV."""
