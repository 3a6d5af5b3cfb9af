"""S3 access (pipelines.net.s3) and the moto server the tests reach it through."""
