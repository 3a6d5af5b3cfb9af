"""Where inventory reports are read from: a local folder (or one manifest.json) or an S3 prefix."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pipelines.config import Source
from pipelines.errors import RejectedFile
from pipelines.ingest.readers.s3_inventory.load import destination_bucket
from pipelines.ingest.readers.s3_inventory.manifest import STAMP, Manifest, ManifestRef
from pipelines.net import s3 as s3mod
from pipelines.sources.inventory_format import local_data_file
from pipelines.sources.options import S3InventoryOptions


class Store:
    def manifests(self) -> list[ManifestRef]:
        raise NotImplementedError

    def read(self, ref: ManifestRef) -> bytes:
        raise NotImplementedError

    def data_file(self, m: Manifest, i: int, tmp: Path) -> Path:
        raise NotImplementedError


def _ref_names(parts: list[str]) -> tuple[str, str]:
    """(dated folder, configuration folder) of a manifest from its path segments."""
    folder = parts[-2] if len(parts) >= 2 else ""
    group = "/".join(parts[:-2]) if STAMP.match(folder) else "/".join(parts[:-1])
    return folder, group


class LocalStore(Store):
    def __init__(self, root: Path) -> None:
        self.root = root

    def manifests(self) -> list[ManifestRef]:
        if self.root.is_file():
            found = [self.root] if self.root.name == "manifest.json" else []
        elif self.root.is_dir():
            found = sorted(self.root.rglob("manifest.json"))
        else:
            raise RejectedFile(str(self.root), "no such file or folder")
        out = []
        for p in found:
            st = p.stat()
            folder, group = _ref_names(list(p.resolve().parts))
            out.append(
                ManifestRef(
                    uri=str(p.resolve()),
                    folder=folder,
                    group=group,
                    local_path=p,
                    size=st.st_size,
                    modified_at=datetime.fromtimestamp(st.st_mtime, UTC).replace(tzinfo=None),
                )
            )
        return out

    def read(self, ref: ManifestRef) -> bytes:
        assert ref.local_path is not None
        try:
            return ref.local_path.read_bytes()
        except OSError as exc:
            raise RejectedFile(ref.uri, f"cannot read: {exc.strerror}") from None

    def data_file(self, m: Manifest, i: int, tmp: Path) -> Path:
        """The data file for files[i]: its key is relative to the destination bucket, whose root is an
        ancestor of the manifest's folder (or, for a copied report, its data/ sibling)."""
        key = str(m.files[i]["key"]).lstrip("/")
        assert m.ref.local_path is not None
        found, tried = local_data_file(m.ref.local_path, key)
        if found is not None:
            return found
        raise RejectedFile(
            m.ref.uri,
            f"files[{i}]: data file {key!r} not found (looked under {tried[0]} and its parents)",
        )


class S3Store(Store):
    def __init__(self, source: Source, location: str) -> None:
        self.source = source
        self.bucket, self.prefix = s3mod.split_uri(location)
        self.client = s3mod.client(source, source.options_as(S3InventoryOptions).retries)

    def manifests(self) -> list[ManifestRef]:
        out = []
        try:
            for page in s3mod.object_pages(self.client, self.bucket, self.prefix):
                for entry in page:
                    if entry["Key"].rsplit("/", 1)[-1] != "manifest.json":
                        continue
                    obj = s3mod.as_object(self.bucket, entry)
                    folder, group = _ref_names(obj.key.split("/"))
                    out.append(
                        ManifestRef(
                            uri=obj.uri,
                            folder=folder,
                            group=group,
                            size=obj.size,
                            modified_at=obj.last_modified,
                            etag=obj.etag or None,
                        )
                    )
        except s3mod.ListingInterrupted as exc:
            raise RejectedFile(
                f"s3://{self.bucket}/{self.prefix}", f"cannot list inventory reports: {exc.reason}"
            ) from None
        return out

    def read(self, ref: ManifestRef) -> bytes:
        bucket, key = s3mod.split_uri(ref.uri)
        try:
            return self.client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except Exception as exc:
            raise RejectedFile(ref.uri, f"cannot read: {s3mod.problem(exc)}") from None

    def data_file(self, m: Manifest, i: int, tmp: Path) -> Path:
        bucket = destination_bucket(m)
        key = str(m.files[i]["key"]).lstrip("/")
        dest = tmp / f"{i:05d}-{key.rsplit('/', 1)[-1]}"
        try:
            self.client.download_file(bucket, key, str(dest))
        except Exception as exc:
            raise RejectedFile(
                m.ref.uri, f"files[{i}]: data file s3://{bucket}/{key} cannot be read: {s3mod.problem(exc)}"
            ) from None
        return dest
