"""The weekly waste report for an ISO week: report.html (a few screens) with its linked pages (every
finding, changes, attention, actions, rules, teams, fleet, data quality) and teams/<team>.html, report.md
(a digest of at most 4 KB) and report-full.md, findings.csv/.parquet.

Every figure comes from `sql/reports/rpt_*.sql` over the warehouse (plus COST002's month-to-date
computation for budget burn). The totals reconcile, per currency: the waste total is the sum of the
counted findings (status `waste`, a waste rule, not acknowledged for the week) and never exceeds spend.
Attention rules (categories in ATTENTION_CATEGORIES: unattributed spend, budgets, anomalies) are listed
apart with the amount at stake, never added to waste. The report is generic over the rule registry: a new
rule's findings appear under its id, name and category without changes here.

collect.py queries the warehouse into model.py's WeeklyReport; render.py turns it into text (Jinja
templates, the findings table) and write.py writes the files; notify.py announces them.
"""

from pipelines.report.collect import collect_report
from pipelines.report.model import TeamPage, WeeklyReport, check_totals
from pipelines.report.render import environment, findings_frame
from pipelines.report.write import write_report

__all__ = [
    "TeamPage",
    "WeeklyReport",
    "check_totals",
    "collect_report",
    "environment",
    "findings_frame",
    "write_report",
]
