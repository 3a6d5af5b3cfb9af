"""The one redaction function: every credential shape it knows, and the S3 messages built through it."""

from __future__ import annotations

import pytest

from pipelines.config import Source
from pipelines.errors import RejectedFile, S3Error
from pipelines.net import s3
from pipelines.redact import redact, remember, url_label


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("cannot reach http://minio:hunter22@10.0.0.5:9000/b", "cannot reach http://***@10.0.0.5:9000/b"),
        (
            "GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F2026&X-Amz-Signature=abc123 failed",
            "GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=***&X-Amz-Signature=*** failed",
        ),
        (
            "https://acct.blob.core.windows.net/c/f.csv?sv=2022&sig=Zm9vYmFy%3D",
            "https://acct.blob.core.windows.net/c/f.csv?sv=2022&sig=***",
        ),
        ("https://x.example/api?token=t0k3n&page=2", "https://x.example/api?token=***&page=2"),
        ("https://hooks.slack.com/services/T0001/B0002/abcdefSECRET", "https://hooks.slack.com/services/***"),
        ("https://discord.com/api/webhooks/123456/tok-en_X", "https://discord.com/api/webhooks/***"),
        (
            "https://contoso.webhook.office.com/webhookb2/1a2b@3c4d/IncomingWebhook/5e6f/7a8b",
            "https://contoso.webhook.office.com/webhookb2/***",
        ),
        ("https://chat.example.com/hooks/xyz123abc", "https://chat.example.com/hooks/***"),
        ("s3://bucket/some/key.csv: 12 rows", "s3://bucket/some/key.csv: 12 rows"),
        ("plain text with -12.5 and a = b", "plain text with -12.5 and a = b"),
    ],
)
def test_redact_masks_every_credential_shape(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_redact_masks_credential_environment_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEBYaD")
    monkeypatch.setenv("GRAFANA_API_TOKEN", "glsa_abcdef")
    monkeypatch.setenv("PGPASSWORD_NOT_A_SUFFIX", "visible-value")
    monkeypatch.setenv("DB_PASSWORD", "pw-1234")
    text = "key wJalrXUtnFEMI/K7MDENG token FwoGZXIvYXdzEBYaD glsa_abcdef pw-1234 visible-value"
    assert redact(text) == "key *** token *** *** *** visible-value"


def test_remembered_secrets_and_url_labels() -> None:
    remember("a-configured-secret-value")
    assert redact("x a-configured-secret-value y") == "x *** y"
    assert url_label("https://user:pw@hooks.example.com/T1/B2/s3cr3t?x=1") == "https://hooks.example.com/***"
    assert url_label("http://127.0.0.1:9") == "http://127.0.0.1:9"


def test_s3_messages_and_errors_are_redacted() -> None:
    source = Source(name="m", kind="focus", uri="s3://b/p/", endpoint_url="http://u:p4ssw0rd-x@h:1")
    s3.client(source)  # registers the endpoint's password
    exc = ValueError('Could not connect to "http://u:p4ssw0rd-x@h:1/b" (password p4ssw0rd-x)')
    assert s3.message("s3://b/p/", "cannot list", exc) == (
        's3://b/p/: cannot list: Could not connect to "http://***@h:1/b" (password ***)'
    )
    assert "p4ssw0rd-x" not in str(S3Error("see http://u:p4ssw0rd-x@h:1"))
    assert (
        str(RejectedFile("f.csv", "GET /x?token=abc&sig=def", line=3)) == "f.csv:3: GET /x?token=***&sig=***"
    )
