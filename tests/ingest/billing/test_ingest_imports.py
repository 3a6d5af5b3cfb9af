"""What loading a FOCUS bill imports: not pandas (about 0.3 CPU s of a small run's few seconds; pyarrow's
`pa.array` imports it on its first call, so the observing function's empty tag array is made without it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import FOCUS_SAMPLE

LOAD = """
import sys
from pathlib import Path
from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.warehouse import connect
config = load_config(Path(sys.argv[1]))
con = connect(config.warehouse_path)
report = ingest(con, config, targets=("billing_line_items",))
assert report.rows_into("billing_line_items") == 1000, report
print("pandas" in sys.modules)
"""


def test_loading_the_focus_sample_does_not_import_pandas(tmp_path: Path) -> None:
    (tmp_path / "landing").mkdir()
    (tmp_path / "landing" / FOCUS_SAMPLE.name).write_bytes(FOCUS_SAMPLE.read_bytes())
    config = tmp_path / "wastewatch.yaml"
    config.write_text("sources:\n  - {name: focus, kind: focus, uri: landing/}\n", encoding="utf-8")
    repo = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-c", LOAD, str(config)], capture_output=True, text=True, cwd=repo, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False"
