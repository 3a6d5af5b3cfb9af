"""A real Prometheus on 127.0.0.1 holding DCGM-exporter series backfilled from the H200 capture.

`fleet_series()` replays the capture (tests/fixtures/telemetry/h200/nvidia_smi_query_gpu.csv: utilisation,
memory, power at 1 s) as three GPUs on two hosts scraped every 60 s for four hours, with the millisecond
jitter of real scrapes and, on one GPU, scrapes exactly on the hour (the boundary a Prometheus 2.x range
includes at both ends). The same samples are written as OpenMetrics for `promtool tsdb
create-blocks-from openmetrics` and as a DCGM exporter scrape text for the raw-sample path (`dcgm`
reader), so both paths read identical values.

`start_prometheus()` backfills a TSDB, starts `prometheus` on a free port (retention large enough that the
backfilled blocks stay) and waits until it answers a query over them. Debian's `prometheus` package gives
both binaries; without them the tests that need them skip, unless WASTEWATCH_REQUIRE_PROMETHEUS=1 (`.ci/run`).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers.paths import FIXTURES

H200 = FIXTURES / "telemetry" / "h200" / "nvidia_smi_query_gpu.csv"
FIRST_HOUR = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)
HOURS = 4
SCRAPE_S = 60
# (host, gpu index, uuid, offset into the capture, scrape on the hour exactly)
GPUS = (
    ("gpu-node-a", 0, "GPU-0a7e1c5e-0000-4000-8000-00000000a000", 0, True),
    ("gpu-node-a", 1, "GPU-0a7e1c5e-0000-4000-8000-00000000a001", 97, False),
    ("gpu-node-b", 0, "GPU-0a7e1c5e-0000-4000-8000-00000000b000", 211, False),
)
MODEL = "NVIDIA H200"
MEM_TOTAL = 143771.0
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE")


@dataclass(frozen=True)
class Sample:
    metric: str
    labels: tuple[tuple[str, str], ...]
    value: float
    ts_ms: int


def _capture() -> list[tuple[float, float, float]]:
    """(util %, memory used MiB, power W) of each row of the H200 capture."""
    out = []
    with H200.open(encoding="utf-8") as f:
        for r in csv.DictReader(f, skipinitialspace=True):
            out.append(
                (
                    float(r["utilization.gpu [%]"].rstrip(" %")),
                    float(r["memory.used [MiB]"].rstrip(" MiB")),
                    float(r["power.draw [W]"].rstrip(" W")),
                )
            )
    return out


def fleet_series(hours: int = HOURS) -> list[Sample]:
    capture = _capture()
    start_ms = int(FIRST_HOUR.timestamp() * 1000)
    out = []
    for host, index, uuid, offset, on_the_hour in GPUS:
        labels = (
            ("Hostname", host),
            ("UUID", uuid),
            ("gpu", str(index)),
            ("instance", f"{host}:9400"),
            ("job", "dcgm-exporter"),
            ("modelName", MODEL),
        )
        for i in range(hours * 3600 // SCRAPE_S + (1 if on_the_hour else 0)):
            jitter = 0 if on_the_hour else 117 + 13 * ((i * 7 + index) % 11)  # ms after the scrape tick
            ts = start_ms + i * SCRAPE_S * 1000 + jitter
            util, used, power = capture[(offset + i * 3) % len(capture)]
            for metric, value in zip(METRICS, (util, used, MEM_TOTAL - used, power), strict=True):
                out.append(Sample(metric, labels, value, ts))
    return out


def _label_text(labels: tuple[tuple[str, str], ...]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels)


def openmetrics(samples: list[Sample]) -> str:
    """OpenMetrics text for promtool's backfill: one family per metric, timestamps in seconds, `# EOF`."""
    lines = []
    for metric in METRICS:
        lines.append(f"# TYPE {metric} gauge")
        for s in samples:
            if s.metric == metric:
                lines.append(f"{metric}{{{_label_text(s.labels)}}} {s.value!r} {s.ts_ms / 1000:.3f}")
    return "\n".join([*lines, "# EOF"]) + "\n"


def scrape_text(samples: list[Sample]) -> str:
    """The same samples as a DCGM exporter scrape text (Prometheus exposition, timestamps in ms)."""
    lines = []
    for metric in METRICS:
        lines.append(f"# TYPE {metric} gauge")
        lines += [
            f"{metric}{{{_label_text(s.labels)}}} {s.value!r} {s.ts_ms}"
            for s in samples
            if s.metric == metric
        ]
    return "\n".join(lines) + "\n"


def binaries() -> tuple[str, str] | None:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    return (prometheus, promtool) if prometheus and promtool else None


def require_binaries() -> tuple[str, str]:
    """The two binaries, or skip (fail under WASTEWATCH_REQUIRE_PROMETHEUS=1) saying why."""
    found = binaries()
    if found is None:
        why = "no `prometheus`/`promtool` on PATH (Debian: apt-get install prometheus; .ci/run installs it)"
        if os.environ.get("WASTEWATCH_REQUIRE_PROMETHEUS") == "1":
            pytest.fail(f"{why}, and WASTEWATCH_REQUIRE_PROMETHEUS=1")
        pytest.skip(why)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def start_prometheus(
    workdir: Path, samples: list[Sample], web_config: str | None = None, tls: bool = False
) -> Iterator[str]:
    """Backfill `samples`, run Prometheus on 127.0.0.1 and yield its base URL; stopped on exit.

    `web_config` is Prometheus' --web.config.file (basic auth users, TLS); with `tls` the URL is https."""
    prometheus, promtool = require_binaries()
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / "tsdb"
    source = workdir / "backfill.om"
    source.write_text(openmetrics(samples), encoding="utf-8")
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\n", encoding="utf-8")
    port = free_port()
    args = [
        prometheus,
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--config.file={config}",
        "--storage.tsdb.retention.time=100y",  # the backfilled blocks are older than the default 15 days
        "--log.level=warn",
    ]
    if web_config is not None:
        (workdir / "web.yml").write_text(web_config, encoding="utf-8")
        args.append(f"--web.config.file={workdir / 'web.yml'}")
    log = (workdir / "prometheus.log").open("wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603 - our own arguments
    base = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    try:
        _wait_ready(base, proc, workdir, authed=web_config is not None and not tls)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_ready(base: str, proc: subprocess.Popen[bytes], workdir: Path, authed: bool) -> None:
    """Until the server answers, and (without auth) sees the backfilled series."""
    deadline = time.monotonic() + 20
    query = f"{base}/api/v1/query?query=count(DCGM_FI_DEV_GPU_UTIL)&time={FIRST_HOUR.timestamp() + 1800:.0f}"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited: {(workdir / 'prometheus.log').read_text()[-2000:]}")
        try:
            unverified = ssl._create_unverified_context() if base.startswith("https") else None  # noqa: S323 - our own test server
            with urllib.request.urlopen(
                f"{base}/-/ready" if authed else query, timeout=2, context=unverified
            ) as resp:  # noqa: S310
                if authed:
                    return
                result = json.loads(resp.read())["data"]["result"]
                if result and result[0]["value"][1] == str(len(GPUS)):
                    return
        except OSError as exc:
            if authed and getattr(exc, "code", None) == 401:  # up, and asking for credentials
                return
        time.sleep(0.2)
    raise RuntimeError(f"prometheus did not become ready: {(workdir / 'prometheus.log').read_text()[-2000:]}")


@dataclass
class Canned:
    """A stand-in HTTP API on 127.0.0.1: answers each path from a queue of (status, body, headers) and
    records every request's path, parameters (URL query, or a POST's form) and headers (with `method`).
    The last answer of a path repeats."""

    answers: dict[str, list[tuple[int, str, dict[str, str]]]]
    seen: list[tuple[str, dict[str, list[str]], dict[str, str]]]
    url: str = ""


def matrix(series: list[tuple[dict[str, str], list[tuple[float, str]]]]) -> str:
    """A query_range success body."""
    result = [{"metric": m, "values": [[t, v] for t, v in values]} for m, values in series]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


@contextmanager
def canned_api(answers: dict[str, list[tuple[int, str, dict[str, str]]]]) -> Iterator[Canned]:
    import http.server
    import urllib.parse

    canned = Canned(answers={k: list(v) for k, v in answers.items()}, seen=[])
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            length = int(self.headers.get("Content-Length") or 0)
            self._answer(self.rfile.read(length).decode())

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            self._answer(None)

        def _answer(self, form: str | None) -> None:
            parts = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(form if form is not None else parts.query)
            with lock:
                canned.seen.append((parts.path, query, {**dict(self.headers), "method": self.command}))
                queue = canned.answers.get(parts.path) or [
                    (404, '{"status":"error","error":"not found"}', {})
                ]
                status, body, headers = queue.pop(0) if len(queue) > 1 else queue[0]
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the http.server API
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    canned.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield canned
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def self_signed_cert(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own CA, and its key (openssl; skip without it)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no `openssl` on PATH to make a test certificate")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(  # noqa: S603 - our own arguments
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key
