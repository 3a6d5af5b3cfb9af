"""The moto S3/EC2 server fixture really serves boto3 over HTTP on 127.0.0.1."""

from __future__ import annotations

import boto3


def test_boto3_round_trip_through_the_local_server(s3_server: str) -> None:
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket="fixture-smoke")
    s3.put_object(Bucket="fixture-smoke", Key="a/b.txt", Body=b"hello")
    listed = s3.list_objects_v2(Bucket="fixture-smoke", Prefix="a/")
    assert [(o["Key"], o["Size"]) for o in listed["Contents"]] == [("a/b.txt", 5)]
    assert listed["Contents"][0]["ETag"] == '"5d41402abc4b2a76b9719d911017c592"'
    ec2 = boto3.client("ec2", endpoint_url=s3_server, region_name="us-east-1")
    assert ec2.describe_instances()["Reservations"] == []
