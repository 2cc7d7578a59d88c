"""Job files: TOML -> a validated :class:`Job` (see docs/jobs.md)."""

from mpinet.jobs.spec import SCHEMA, Job, JobError, load_job, parse_set

__all__ = ["SCHEMA", "Job", "JobError", "load_job", "parse_set"]
