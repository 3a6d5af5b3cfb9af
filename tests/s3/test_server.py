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
    # EC2 answers too; the server is shared by the session's tests, so look only for this test's tag
    ec2 = boto3.client("ec2", endpoint_url=s3_server, region_name="us-east-1")
    mine = [{"Name": "tag:fixture", "Values": ["server-smoke"]}]
    assert ec2.describe_instances(Filters=mine)["Reservations"] == []
    ec2.run_instances(
        ImageId="ami-12345678",
        MinCount=1,
        MaxCount=1,
        InstanceType="p5.48xlarge",
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "fixture", "Value": "server-smoke"}]}
        ],
    )
    [reservation] = ec2.describe_instances(Filters=mine)["Reservations"]
    assert reservation["Instances"][0]["InstanceType"] == "p5.48xlarge"
