"""The marts (pipelines.transform, sql/marts): cost_hourly, the GPU marts, their comments."""
