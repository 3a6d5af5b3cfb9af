"""`kubectl get pods -o json` (a PodList, a `kind: List`, or one Pod) -> jobs, one row per pod.

- job_id = the pod's `metadata.uid` (else namespace/name); job_name = the pod name; account = the
  namespace; hosts = [spec.nodeName]; submitted_at = creationTimestamp; started_at = status.startTime;
  ended_at = the last container's `finishedAt` once the pod has ended.
- GPUs: per container max(limits, requests) of `nvidia.com/gpu` (also `amd.com/gpu`), summed over the
  containers; an init container's request counts when larger (Kubernetes' effective request). MIG slices
  (`nvidia.com/mig-1g.10gb`) count when the pod asks for no whole GPU: gpus_requested = slices,
  gpu_type = `mig-1g.10gb`. Else gpu_type from the node selector (`nvidia.com/gpu.product`,
  `cloud.google.com/gke-accelerator`, `karpenter.k8s.aws/instance-gpu-name`).
- state from the phase: Succeeded -> COMPLETED; Failed -> FAILED, or OUT_OF_MEMORY when a container
  was OOMKilled, PREEMPTED when the pod was Evicted/Preempted, DEADLINE on DeadlineExceeded; Running ->
  RUNNING; Pending -> PENDING; Unknown (node lost) -> NODE_FAIL. state_raw = phase (reason).
  exit_code = the first non-zero exit code of the containers (else 0) once they terminated.
- tags = the pod's labels (normalised keys) plus `controller_kind`/`controller_name` from its owner
  reference; team/project from the labels (config `tags` aliases); user from a `user` label.
- Options: `cluster`, `gpu_only` (default true: pods that ask for no GPU are skipped and counted in
  the load's warnings).
"""

from __future__ import annotations

import json
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, PerFileBatch
from pipelines.ingest.readers.jobs_common import insert_jobs, parse_time, read_text
from pipelines.sources.options import K8sPodsOptions

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
MIG_PREFIX = "nvidia.com/mig-"
GPU_PRODUCT_LABELS = (
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "karpenter.k8s.aws/instance-gpu-name",
)


def _quantity(value: Any) -> int:
    """A resource quantity for a countable resource ("8", 8, "1k" is not a GPU count -> ValueError)."""
    text = str(value).strip()
    if not text.isdigit():
        raise ValueError(f"GPU quantity {value!r} is not a whole number")
    return int(text)


def _container_resources(c: dict[str, Any]) -> dict[str, int]:
    res = c.get("resources") or {}
    out: dict[str, int] = {}
    for kind in ("requests", "limits"):
        for name, value in (res.get(kind) or {}).items():
            if name in GPU_RESOURCES or name.startswith(MIG_PREFIX):
                out[name] = max(out.get(name, 0), _quantity(value))
    return out


def _effective(spec: dict[str, Any]) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in spec.get("containers") or []:
        for k, v in _container_resources(c).items():
            total[k] = total.get(k, 0) + v
    for c in spec.get("initContainers") or []:
        for k, v in _container_resources(c).items():
            total[k] = max(total.get(k, 0), v)
    return total


def _state(status: dict[str, Any]) -> tuple[str | None, str]:
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or "")
    terminated = [
        (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated") or {}
        for cs in status.get("containerStatuses") or []
    ]
    oom = any(t.get("reason") == "OOMKilled" for t in terminated)
    raw = (
        phase + (f" ({reason})" if reason else "") + (" (OOMKilled)" if oom and reason != "OOMKilled" else "")
    )
    match phase:
        case "Succeeded":
            return "COMPLETED", raw
        case "Failed":
            if oom:
                return "OUT_OF_MEMORY", raw
            if reason in ("Evicted", "Preempted", "Preempting", "Terminated"):
                return "PREEMPTED", raw
            if reason == "DeadlineExceeded":
                return "DEADLINE", raw
            return "FAILED", raw
        case "Running":
            return "RUNNING", raw
        case "Pending":
            return "PENDING", raw
        case "Unknown":
            return "NODE_FAIL", raw
    return None, raw


def _pods(file: SourceFile) -> list[Any]:
    """The pods of a `kubectl get pods -o json` file (a PodList, a `kind: List`, or one Pod)."""
    try:
        doc = json.loads(read_text(file))
    except json.JSONDecodeError as exc:
        raise RejectedFile(file.uri, f"not JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    if isinstance(doc, dict) and doc.get("kind") == "Pod":
        return [doc]
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return list(doc["items"])
    raise RejectedFile(
        file.uri, "expected `kubectl get pods -o json` output (an object with `items`, or a Pod)"
    )


def _gpus(spec: dict[str, Any], file: SourceFile, label: str) -> tuple[int, str | None]:
    """The pod's GPUs (whole GPUs, else MIG slices) and their type (node selector, else the MIG profiles)."""
    try:
        resources = _effective(spec)
    except ValueError as exc:
        raise RejectedFile(file.uri, f"{label}: {exc}") from None
    whole = sum(v for k, v in resources.items() if k in GPU_RESOURCES)
    mig = {k[len("nvidia.com/") :]: v for k, v in resources.items() if k.startswith(MIG_PREFIX) and v}
    selector = spec.get("nodeSelector") or {}
    gpu_type = next((str(selector[k]) for k in GPU_PRODUCT_LABELS if selector.get(k)), None)
    if not whole and mig:
        return sum(mig.values()), ",".join(sorted(mig))
    return whole, gpu_type


def _times(
    meta: dict[str, Any], status: dict[str, Any], state: str, file: SourceFile, label: str
) -> tuple[Any, Any, Any, str | None]:
    """submitted, started, ended (once the pod has ended), and the exit code once every container ended."""
    utc = ZoneInfo("UTC")
    statuses = status.get("containerStatuses") or []
    terminated = [(cs.get("state") or {}).get("terminated") for cs in statuses]
    ended_all = bool(statuses) and all(terminated)
    exit_codes = [t.get("exitCode") for t in terminated if t and t.get("exitCode") is not None]
    exit_code = next((str(c) for c in exit_codes if c != 0), str(exit_codes[0]) if exit_codes else None)
    try:
        submitted = parse_time(meta.get("creationTimestamp"), utc)
        started = parse_time(status.get("startTime"), utc)
        finishes = [parse_time(t.get("finishedAt"), utc) for t in terminated if t and t.get("finishedAt")]
        transitions = [
            parse_time(c.get("lastTransitionTime"), utc)
            for c in status.get("conditions") or []
            if c.get("lastTransitionTime")
        ]
    except ValueError as exc:
        raise RejectedFile(file.uri, f"{label}: unreadable time: {exc}") from None
    ended = None
    if state not in ("RUNNING", "PENDING"):
        ended = max((f for f in finishes if f), default=None) if ended_all else None
        ended = ended or max((t for t in transitions if t), default=None)
    return submitted, started, ended, exit_code if ended_all else None


def _job(pod: dict[str, Any], n: int, file: SourceFile, opts: K8sPodsOptions) -> dict[str, Any] | None:
    """The job row of pod `n`, or None when it asks for no GPU and the source keeps only GPU pods."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    name = meta.get("name")
    if not name:
        raise RejectedFile(file.uri, f"items[{n}]: a pod without metadata.name")
    label = f"items[{n}] (pod {meta.get('namespace', 'default')}/{name})"
    gpus, gpu_type = _gpus(spec, file, label)
    if opts.gpu_only and not gpus:
        return None
    state, state_raw = _state(status)
    if state is None:
        raise RejectedFile(
            file.uri,
            f"{label}: unknown pod phase {status.get('phase')!r} (expected Pending, Running, "
            "Succeeded, Failed or Unknown)",
        )
    submitted, started, ended, exit_code = _times(meta, status, state, file, label)
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    owners = meta.get("ownerReferences") or []
    if owners:
        labels.setdefault("controller_kind", str(owners[0].get("kind", "")))
        labels.setdefault("controller_name", str(owners[0].get("name", "")))
    node = spec.get("nodeName")
    return {
        "_row": n,
        "job_id": meta.get("uid") or f"{meta.get('namespace', 'default')}/{name}",
        "cluster": opts.cluster,
        "job_name": name,
        "run_id": None,
        "user": labels.get("user"),
        "account": meta.get("namespace"),
        "team": None,
        "project": None,
        "partition": None,
        "state": state,
        "state_raw": state_raw,
        "exit_code": exit_code,
        "submitted_at": submitted,
        "started_at": started,
        "ended_at": ended,
        "gpus_requested": gpus,
        "gpu_type": gpu_type,
        "nodes": 1 if node else None,
        "hosts": [node] if node else None,
        "instance_ids": None,
        "gpu_indices": None,
        "tags_json": json.dumps(labels) if labels else None,
    }


class K8sPodsReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(K8sPodsOptions)
        jobs, skipped = [], 0
        for n, pod in enumerate(_pods(file)):
            if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
                continue
            job = _job(pod, n, file, opts)
            if job is None:
                skipped += 1
            else:
                jobs.append(job)
        n_loaded = insert_jobs(con, jobs, "stg_k8s__jobs", file, ctx)
        warnings = [f"{skipped} pod(s) without GPU requests skipped"] if skipped else []
        return LoadResult(rows=n_loaded, warnings=warnings)
