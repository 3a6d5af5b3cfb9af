"""Remediation with approval (`wastewatch remediate plan|apply`; docs/remediation.md).

plan.py turns the week's actionable findings into actions (sql/remediate/candidates.sql) kept in
remediation_actions and written as JSON for other tooling; apply.py approves and applies them, re-checking
each target right before acting (targets.py: one function per kind, over boto3) and recording every
approval and attempt in remediation_log.
"""
