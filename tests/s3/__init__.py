"""S3 access (pipelines.s3) and the moto server the tests reach it through."""
