"""Exports of the warehouse for other tools: `focus` (the unified bill as FOCUS 1.2, one partition per billing
period, locally or on S3)."""
