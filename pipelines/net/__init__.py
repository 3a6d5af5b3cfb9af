"""Reaching remote services: S3 through boto3 (s3.py) and the bounds every remote read keeps (limits.py)."""
