"""`wastewatch`: the command line.

Exit codes: 0 ok; 1 some input was rejected or a source could not be read (the rest loaded), or the run
failed part-way; 2 usage or configuration error, nothing done; 3 the warehouse is held by another writer.
Every failure is one line on stderr (`error: <what>: <cause>`), redacted (pipelines/redact.py); a traceback
only with -v.

ingest, evaluate, report and run materialise the same Dagster asset graph the schedules run, in-process.
Every writing command holds the warehouse's run-level lock (pipelines/lock.py) for its whole run.
One module per command group; `app` holds the group and its global options, `common` what they share.
"""

from pipelines.cli.ack import ack
from pipelines.cli.alert import alert
from pipelines.cli.app import main
from pipelines.cli.catalogue import rules
from pipelines.cli.demo import demo
from pipelines.cli.estimate import estimate
from pipelines.cli.export import export
from pipelines.cli.pipeline import evaluate, ingest, init, report, run
from pipelines.cli.query import sql
from pipelines.cli.remediate import remediate

for _command in (
    init,
    ingest,
    evaluate,
    report,
    run,
    sql,
    export,
    rules,
    ack,
    estimate,
    demo,
    remediate,
    alert,
):
    main.add_command(_command)

__all__ = ["main"]
