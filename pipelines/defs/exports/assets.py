"""`exports/focus`: the unified bill as FOCUS 1.2, one asset partition per billing period (the same code as
`wastewatch export focus`)."""

from datetime import UTC, date, datetime

import dagster as dg
from pydantic import Field

from pipelines.defs.partitions import definitions_history_start
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.errors import S3Error
from pipelines.export.focus import (
    FORMATS,
    ExportError,
    default_destination,
    export_focus,
    periods_in,
    s3_client_maker,
)
from pipelines.redact import redact


class FocusExportConfig(dg.Config):
    """Where and how the period is written (the CLI's --out, --format, --endpoint-url and --region)."""

    out: str = Field(
        "", description="Folder or s3://bucket/prefix (default: exports/focus/ beside the config)."
    )
    format: str = Field("parquet", description="parquet or csv.")
    endpoint_url: str = Field("", description="S3-compatible endpoint for an s3:// destination.")
    region: str = Field("", description="S3 region for an s3:// destination.")


def monthly_partitions_from(start: date) -> dg.MonthlyPartitionsDefinition:
    """Every billing period (YYYY-MM) from the month of `start` to the current one."""
    return dg.MonthlyPartitionsDefinition(
        start_date=f"{start.year:04d}-{start.month:02d}", fmt="%Y-%m", end_offset=1
    )


def billing_periods() -> dg.MonthlyPartitionsDefinition:
    """The billing periods of the config the definitions are built for: from the month of its history start."""
    today = datetime.now(UTC).date()
    return monthly_partitions_from(definitions_history_start(today))


def _focus_export_asset(periods: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    @dg.asset(
        key=["exports", "focus"],
        group_name="exports",
        kinds={"duckdb", "parquet"},
        pool=WAREHOUSE_POOL,
        partitions_def=periods,
        deps=["billing_line_items"],
        description="The billing period's lines as FOCUS 1.2 (billing_period=YYYY-MM/ under the destination, "
        "with _manifest.json); a restated period replaces its partition whole.",
    )
    def focus_export(
        context: dg.AssetExecutionContext, config: FocusExportConfig, wastewatch: WastewatchResource
    ) -> dg.MaterializeResult:
        period = context.partition_key
        settings = wastewatch.load()
        if config.format not in FORMATS:
            raise dg.Failure(
                f"unknown export format {config.format!r} (expected one of {', '.join(FORMATS)})"
            )
        destination = config.out or default_destination(settings)
        maker = (
            s3_client_maker(destination, config.endpoint_url or None, config.region or None)
            if destination.startswith("s3://")
            else None
        )
        with wastewatch.warehouse() as con:
            if not periods_in(con, [period]):
                # nothing billed in the period: nothing written (an earlier export of it is left as it is)
                note = f"no billing lines for {period}: nothing exported"
                context.log.info(note)
                return dg.MaterializeResult(metadata={"period": period, "lines": 0, "note": note})
            try:
                result = export_focus(con, destination, fmt=config.format, periods=[period], s3_client=maker)
            except (ExportError, S3Error) as exc:
                # the CLI's one line (a foreign file at the destination, an unreachable bucket), not a traceback
                raise dg.Failure(description=redact(str(exc))) from None
        (written,) = result.periods
        metadata: dict[str, object] = {
            "period": period,
            "lines": written.lines,
            "format": config.format,
            "destination": redact(destination),
            "files": ", ".join(written.files),
            "replaced": written.replaced,
        }
        for total in written.totals:
            metadata[f"billed_cost_{total['currency']}"] = total["billed_cost"]
            metadata[f"effective_cost_{total['currency']}"] = total["effective_cost"]
        for note in result.cleaned:
            context.log.warning(f"cleared a killed export's leftover: {note}")
        return dg.MaterializeResult(metadata=metadata)

    return focus_export


@dg.definitions
def export_assets() -> dg.Definitions:
    return dg.Definitions(assets=[_focus_export_asset(billing_periods())])
