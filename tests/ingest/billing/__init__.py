"""Billing readers: FOCUS, AWS CUR and CUR 2.0, Azure, GCP; deliveries, restatements, S3, storage of lines."""
