"""Every URL in `wastewatch.yaml` is checked when the file is loaded: a scheme and a host; webhooks https://
(http:// only to a loopback address); endpoints and links http(s)://. A refused value is quoted with its
secret parts masked, naming the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import ConfigError, load_config
from pipelines.redact import redact
from tests.helpers.config import write_config

TOKEN = "sentinel-T0K3N-in-the-path"

# name -> (the YAML, the one error line after "{f}:"); every webhook carries TOKEN, which no message may hold
REFUSED: dict[str, tuple[str, str]] = {
    "a webhook without a scheme": (
        f"notify:\n  webhook_url: hooks.slack.com/services/T0/B0/{TOKEN}\n",
        "2: notify.webhook_url: 'hooks.slack.com/***' is not a URL: it needs a scheme and a host, "
        "e.g. https://hooks.slack.com/services/***",
    ),
    "a file:// webhook": (
        "notify:\n  webhook_url: file:///etc/passwd\n",
        "2: notify.webhook_url: 'file:///***': a webhook must be an https:// or http:// URL, not file://",
    ),
    "an http:// webhook to another host": (
        f"notify:\n  webhook_url: http://chat.example.com/hooks/{TOKEN}\n",
        "2: notify.webhook_url: 'http://chat.example.com/***' is http://: a webhook carries its token to "
        "another service, so it must be https:// (http:// only to a loopback address such as 127.0.0.1, "
        "for tests)",
    ),
    "a webhook without a host": (
        f"notify:\n  email_html: true\n  webhook_url: https:///services/{TOKEN}\n",
        "3: notify.webhook_url: 'https:///***' has no host, e.g. https://hooks.slack.com/services/***",
    ),
    "a webhook whose port is not a number": (
        f"alert:\n  webhook_url: https://hooks.example.com:4x3/{TOKEN}\n",
        "2: alert.webhook_url: 'https://hooks.example.com:4x3/***' is not a valid URL (its host or port "
        "cannot be read)",
    ),
    "a webhook with a space": (
        f"alert:\n  webhook_url: 'https://hooks.example.com/{TOKEN} '\n",
        "2: alert.webhook_url: 'https://hooks.example.com/***' holds spaces or control characters; a URL "
        "has none",
    ),
    "an S3 endpoint without a scheme": (
        "sources:\n  - {name: b, kind: focus, uri: s3://bills/focus/, endpoint_url: minio.internal:9000}\n",
        "2: sources[0].endpoint_url: 'minio.internal:9000' is not a URL: it needs a scheme and a host, "
        "e.g. http://minio.internal:9000",
    ),
    "an endpoint's password is masked": (
        "remediation:\n  s3_endpoint_url: ftp://ops:pa55-w0rd@minio.internal:9000\n",
        "2: remediation.s3_endpoint_url: 'ftp://***@minio.internal:9000': an endpoint must be an http:// "
        "or https:// URL, not ftp://",
    ),
    "an EC2 endpoint without a host": (
        "remediation:\n  ec2_endpoint_url: 'http://:4566'\n",
        "2: remediation.ec2_endpoint_url: 'http://:4566' has no host, e.g. http://minio.internal:9000",
    ),
    "an endpoint in a source's options": (
        "sources:\n  - name: ec2\n    kind: ec2_instances\n    uri: ec2://us-east-1\n"
        "    options: {endpoint_url: 'localhost:4566'}\n",
        "5: sources[0].options.endpoint_url: 'localhost:4566' is not a URL: it needs a scheme and a host, "
        "e.g. http://minio.internal:9000",
    ),
    "a Prometheus source without a scheme": (
        "sources:\n  - {name: prom, kind: prometheus, uri: 'prometheus.internal:9090'}\n",
        "2: sources[0].uri: 'prometheus.internal:9090' is not a URL: it needs a scheme and a host, "
        "e.g. http://prometheus.internal:9090",
    ),
    "a source of a scheme nothing reads": (
        "sources:\n  - {name: g, kind: focus, uri: 'gs://bills/focus/'}\n",
        "2: sources[0].uri: 'gs://bills/focus/': a source's uri is a file, folder or glob, or an s3://, "
        "ec2://, logs:// or http(s):// URL, not gs://",
    ),
    "an s3:// uri without a bucket": (
        "sources:\n  - {name: b, kind: focus, uri: 's3:///focus/'}\n",
        "2: sources[0].uri: 's3:///focus/' names no bucket, e.g. s3://bucket/prefix/",
    ),
    "a report link without a scheme": (
        "notify:\n  report_url: finops.example.com/reports\n",
        "2: notify.report_url: 'finops.example.com/reports' is not a URL: it needs a scheme and a host, "
        "e.g. https://finops.example.com/reports",
    ),
    "a Spark Connect URL without a host": (
        "engine: spark\nspark:\n  url: 'sc:///;token=dapi-secret'\n",
        "3: spark.url: 'sc:///;token=***' has no host, e.g. sc://spark-connect.internal:15002",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_url_without_the_right_scheme_and_a_host_is_refused_at_load(tmp_path: Path, case: str) -> None:
    body, expected = REFUSED[case]
    path = write_config(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}:{expected}"
    for secret in (TOKEN, "pa55-w0rd", "dapi-secret"):
        assert secret not in str(err.value)


ACCEPTED = {
    "notify.webhook_url": "https://hooks.slack.com/services/T0/B0/XXXX",
    "alert.webhook_url (loopback, IPv4)": "http://127.0.0.1:8080/hooks/XXXX",
    "alert.webhook_url (loopback, IPv6)": "http://[::1]:8080/hooks/XXXX",
    "alert.webhook_url (localhost)": "http://localhost:8080/hooks/XXXX",
}


@pytest.mark.parametrize("key", list(ACCEPTED))
def test_https_webhooks_and_http_to_loopback_load(tmp_path: Path, key: str) -> None:
    section = key.split(".")[0]
    path = write_config(tmp_path, f"{section}:\n  webhook_url: '{ACCEPTED[key]}'\n")
    config = load_config(path)
    assert config.alert_webhook_url == ACCEPTED[key]


def test_endpoints_of_the_users_own_services_may_be_http(tmp_path: Path) -> None:
    """As the docs show: MinIO at http://minio.internal:9000, Prometheus at http://, Spark at sc:// or a master name."""
    path = write_config(
        tmp_path,
        """
        sources:
          - {name: b, kind: focus, uri: s3://bills/focus/, endpoint_url: "http://minio.internal:9000"}
          - {name: p, kind: prometheus, uri: "http://reader:pw-1@prometheus.internal:9090/"}
          - {name: e, kind: ec2_instances, uri: "ec2://", options: {endpoint_url: "http://127.0.0.1:4566"}}
          - {name: l, kind: cloudwatch_logs, uri: "logs://us-east-1"}
          - {name: f, kind: focus, uri: landing/billing/}
        remediation: {s3_endpoint_url: "https://s3.eu-west-1.amazonaws.com", ec2_endpoint_url: "http://localhost:4566"}
        notify: {report_url: "http://intranet/finops/reports"}
        engine: spark
        spark: {url: "local[2]"}
        """,
    )
    config = load_config(path)
    assert [s.endpoint_url for s in config.sources][:1] == ["http://minio.internal:9000"]
    assert config.source_location(config.sources[1]) == "http://prometheus.internal:9090/"
    assert config.remediation.ec2_endpoint_url == "http://localhost:4566"
    # the password in the Prometheus URL is remembered: any message that quotes it is masked
    assert redact("401 for reader:pw-1") == "401 for reader:***"


def test_a_webhook_token_is_masked_in_every_later_message(tmp_path: Path) -> None:
    """A webhook URL of any provider (not only the ones redact knows by their path) is remembered at load."""
    url = f"https://chat.example.com/incoming/{TOKEN}"
    load_config(write_config(tmp_path, f"notify:\n  webhook_url: {url}\n"))
    assert redact(f"cannot post to {url}: timed out") == "cannot post to ***: timed out"
