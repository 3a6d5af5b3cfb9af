"""Resource readers: EC2 DescribeInstances, hosts CSV, the GPU instance-type catalogue."""
